"""What the Python benchmarks time a context manager against (bench/python_bench.py,
bench/cost.py): an empty context manager class, and a loop of `with <expr>: pass`."""
from __future__ import annotations


class Empty:
    """The baseline: a context manager that does nothing."""
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def with_loop(expr: str, env: dict):
    """A function running `with <expr>: pass` n times, compiled from source so that every case
    pays exactly the same loop and the same kind of name lookup: the context-manager
    expression is written inline, as users write it (no lambda or extra call per case)."""
    src = f"def _run(n):\n    for _ in range(n):\n        with {expr}:\n            pass\n"
    ns = dict(env)
    exec(compile(src, f"<bench {expr}>", "exec"), ns)
    return ns["_run"]
