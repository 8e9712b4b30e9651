"""Builds rlprof's extensions with CMake (the repository's own build) for pip: rlprof._rlprof
(the runtime), rlprof._analysis (the analysis library behind rlprof.analysis, whose numpy and
pandas are the `analysis` extra of pyproject.toml) and, when libtorch is found,
rlprof._torch_ops (the operator hook). Metadata is in pyproject.toml. Environment: RLPROF_CMAKE_ARGS adds CMake arguments, RLPROF_JOBS the build
parallelism (else CMAKE_BUILD_PARALLEL_LEVEL, MAX_JOBS, the CPU count).

Installed: the package with its extensions, and rlprof's C++ command as rlprof/_bin/rlprof, which
the `rlprof` console script (rlprof/__main__.py) runs for every subcommand but `run`/`env`.
RLPROF_PREBUILT=<a CMake build directory of this tree> installs what that build made instead of
building again (CI installs the tree it has just built and tested this way)."""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        prebuilt = os.environ.get("RLPROF_PREBUILT")
        if prebuilt:
            self._install_from(os.path.abspath(prebuilt), ext)
            return
        build = os.path.join(os.path.abspath(self.build_temp), "cmake")
        args = ["-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                "-DRLPROF_BUILD_TESTS=OFF", "-DRLPROF_BUILD_BENCHMARKS=OFF",
                f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("RLPROF_CMAKE_ARGS", ""))
        subprocess.run(["cmake", *args], check=True)
        jobs = (os.environ.get("RLPROF_JOBS") or os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or
                os.environ.get("MAX_JOBS") or str(os.cpu_count() or 2))
        # rlprof_python builds _rlprof, _analysis, and _torch_ops where libtorch is found; rlprof the CLI.
        subprocess.run(["cmake", "--build", build, "--target", "rlprof_python", "rlprof",
                        "-j", jobs], check=True)
        self._install_from(build, ext)

    def _install_from(self, build: str, ext: Extension) -> None:
        built = glob.glob(os.path.join(build, "python", "rlprof", "_rlprof*.so"))
        if not built:
            raise RuntimeError("rlprof: the CMake build produced no _rlprof extension")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)
        # rlprof._analysis (rlprof.analysis), the optional operator hook, the runtime library
        # they and the NVTX injection library link (librlprof.so.0, found through $ORIGIN) go
        # next to it (installed with the package directory).
        for f in (glob.glob(os.path.join(build, "python", "rlprof", "_analysis*.so")) +
                  glob.glob(os.path.join(build, "python", "rlprof", "_torch_ops*.so")) +
                  glob.glob(os.path.join(build, "python", "rlprof", "librlprof.so.0")) +
                  glob.glob(os.path.join(build, "python", "rlprof", "librlprof_nvtx.so"))):
            shutil.copyfile(f, os.path.join(os.path.dirname(dest), os.path.basename(f)))
        # The C++ command, run by the `rlprof` console script (rlprof/__main__.py).
        cli = os.path.join(build, "bin", "rlprof")
        if os.access(cli, os.X_OK):
            bindir = os.path.join(os.path.dirname(dest), "_bin")
            os.makedirs(bindir, exist_ok=True)
            shutil.copy2(cli, os.path.join(bindir, "rlprof"))


class BuildPy(build_py):
    """Also puts rlprof-bootstrap.pth at the top of site-packages: every Python of the
    environment then installs rlprof's import hooks when RLPROF_CONFIG or RLPROF_ENABLE is set
    (launch scripts that cannot go through `rlprof run`); otherwise it evaluates one line and
    imports nothing."""

    def run(self) -> None:
        super().run()
        self.copy_file(os.path.join(HERE, "rlprof-bootstrap.pth"),
                       os.path.join(self.build_lib, "rlprof-bootstrap.pth"))


def _version() -> str:
    """The version's one source: the root CMakeLists.txt's project(rlprof VERSION x.y.z); from a
    copy of python/ (scripts/wheel, an out-of-tree `pip install`), what the RLPROF_PREBUILT
    build's own `rlprof version` says (compiled from that line)."""
    import re
    cmake = os.path.join(ROOT, "CMakeLists.txt")
    if os.path.isfile(cmake):
        with open(cmake) as f:
            m = re.search(r"project\(rlprof\s+VERSION\s+([0-9.]+)", f.read())
        if m is not None:
            return m.group(1)
    prebuilt = os.environ.get("RLPROF_PREBUILT")
    if prebuilt:
        out = subprocess.run([os.path.join(prebuilt, "bin", "rlprof"), "version"],
                             capture_output=True, text=True, check=True).stdout.split()
        if len(out) == 2 and out[0] == "rlprof":
            return out[1]
    raise RuntimeError("rlprof's version: no CMakeLists.txt above python/ and no RLPROF_PREBUILT "
                       "build to ask")


setup(version=_version(), ext_modules=[CMakeExtension("rlprof._rlprof")],
      cmdclass={"build_ext": CMakeBuild, "build_py": BuildPy})
