"""Runs TraceLens's gpu_timeline on one Kineto trace and prints it as JSON {type: time ms}.

TraceLens (AMD-AGI/TraceLens) is not on PyPI: run it from a checkout, with the peers test
environment's Python (pandas), e.g. for commit 171dd74:

    git -C TraceLens archive 171dd74 TraceLens | tar -x -C /tmp/tl
    PYTHONPATH=/tmp/tl .venv-peers/bin/python python/tests/peers/tracelens_timeline.py TRACE.json

test_peers_tracelens.py holds the numbers this printed for test/data/peers/ (PROVENANCE.md there).
"""
import json
import logging
import sys
import warnings


def main() -> None:
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    from TraceLens import TreePerfAnalyzer

    df = TreePerfAnalyzer.from_file(sys.argv[1]).get_df_gpu_timeline()
    json.dump({r["type"]: float(r["time ms"]) for _, r in df.iterrows()}, sys.stdout)


if __name__ == "__main__":
    main()
