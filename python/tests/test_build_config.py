"""How the build finds the libtorch of the operator hook (cmake/RlprofTorch.cmake).

`pip install torch` on Linux gives a CUDA build of PyTorch, whose TorchConfig.cmake stops any
configure with a FATAL_ERROR when no CUDA toolkit is installed — QUIET does not silence it. The
hook needs no CUDA (ATen's RecordFunction, libtorch_cpu, libc10), so rlprof takes those from the
PyTorch tree itself and never runs TorchConfig: this configures the repository against a
PyTorch tree whose TorchConfig fails like that one."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")


def fake_torch(root, abi: str | None) -> str:
    """A PyTorch tree as the hook sees it; its TorchConfig stops any configure that runs it."""
    (root / "include" / "ATen").mkdir(parents=True)
    (root / "include" / "ATen" / "record_function.h").write_text("")
    (root / "lib").mkdir()
    for lib in ("libtorch_cpu.so", "libc10.so"):
        (root / "lib" / lib).write_text("")
    cfg = root / "share" / "cmake" / "Torch"
    cfg.mkdir(parents=True)
    text = f'set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI={abi}")\n' if abi else ""
    text += ('message(FATAL_ERROR "Your installed Caffe2 version uses CUDA but I cannot find the '
             'CUDA libraries.")\n')
    (cfg / "TorchConfig.cmake").write_text(text)
    return str(root / "share" / "cmake")


def configure(tmp_path, prefix: str) -> tuple[subprocess.CompletedProcess, str]:
    build = tmp_path / "build"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    p = subprocess.run(["cmake", "-S", ROOT, "-B", str(build), *gen, "-DRLPROF_BUILD_TESTS=OFF",
                        "-DRLPROF_BUILD_BENCHMARKS=OFF", f"-DRLPROF_TORCH_PREFIX={prefix}"],
                       capture_output=True, text=True, timeout=300)
    rules = ""
    for name in ("build.ninja", "Makefile"):
        if (build / name).exists():
            rules = "".join(f.read_text(errors="replace") for f in build.rglob("*")
                            if f.is_file() and f.suffix in ("", ".ninja", ".make", ".txt")
                            and f.stat().st_size < 5_000_000)
            break
    return p, rules


@pytest.mark.parametrize("abi", [None, "0"])
def test_a_cuda_pytorch_without_a_cuda_toolkit_still_gets_the_operator_hook(tmp_path, abi):
    torch_root = tmp_path / "torch"
    p, rules = configure(tmp_path, fake_torch(torch_root, abi))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Caffe2" not in p.stdout + p.stderr  # TorchConfig never ran
    assert f"operator hook against libtorch in {torch_root}" in p.stdout
    # The hook links that tree's libtorch_cpu and libc10, with its string ABI.
    assert f"{torch_root}/lib/libtorch_cpu.so" in rules and f"{torch_root}/lib/libc10.so" in rules
    assert ("-D_GLIBCXX_USE_CXX11_ABI=0" in rules) == (abi == "0")


def test_a_tree_without_libtorch_falls_back_to_find_package_and_builds_without_the_hook(tmp_path):
    empty = tmp_path / "notorch" / "share" / "cmake"
    empty.mkdir(parents=True)
    p, rules = configure(tmp_path, str(empty))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "has no ATen headers, libtorch_cpu and libc10" in p.stdout
    assert f"{tmp_path / 'notorch'}/lib" not in rules
