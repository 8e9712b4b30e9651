"""The launcher's bootstrap directory (`rlprof run` puts it first on PYTHONPATH). It holds
`sitecustomize.py` only; see that file and docs/integrations.md."""
