"""rlprof's bootstrap: imported by every Python process whose PYTHONPATH holds this directory
(`rlprof run -- CMD` puts it there, like opentelemetry-instrument or ddtrace-run).

Profiling off (no RLPROF_CONFIG and no RLPROF_ENABLE in the environment): it only chains to
the next sitecustomize on sys.path and returns; it imports nothing of rlprof. Profiling on:
it imports rlprof._hooks, which installs import hooks that patch verl and vLLM lazily when
the program imports them (no source edits). See docs/integrations.md.
"""
import os as _os
import sys as _sys


def _chain() -> None:
    # Python imports only the first sitecustomize on sys.path: import the one we shadow (a
    # distribution's, a virtualenv's) so it still runs.
    here = _os.path.dirname(_os.path.abspath(__file__))
    mod = _sys.modules.pop("sitecustomize", None)
    saved = list(_sys.path)
    _sys.path[:] = [p for p in _sys.path
                    if _os.path.abspath(p or _os.curdir) != here]
    try:
        import importlib
        importlib.import_module("sitecustomize")
    except ImportError as e:
        if getattr(e, "name", None) != "sitecustomize":
            raise
    finally:
        _sys.path[:] = saved
        if mod is not None:
            _sys.modules["sitecustomize"] = mod


def _active() -> bool:
    env = _os.environ
    return bool(env.get("RLPROF_CONFIG")) or env.get("RLPROF_ENABLE", "") not in ("", "0")


try:
    _chain()
finally:
    if _active():
        try:
            # The directory holding the rlprof package (the build tree's python/, or
            # site-packages): importable even where only this directory is on PYTHONPATH.
            _pkg_root = _os.path.dirname(_os.path.dirname(_os.path.dirname(
                _os.path.abspath(__file__))))
            if _pkg_root not in _sys.path:
                _sys.path.append(_pkg_root)
            import rlprof._hooks as _hooks
            _hooks.install()
        except Exception as _e:  # never stop the user's program
            _sys.stderr.write(f"rlprof: warning: the bootstrap could not install its hooks "
                              f"({_e!r}); this process runs without rlprof\n")
