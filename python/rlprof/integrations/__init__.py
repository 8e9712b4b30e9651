"""Adapters that let frameworks drive rlprof through their own profiler interfaces."""
