"""Moved to rungs/core/result.py; kept so branches written against the old path still import. New code imports
rungs.core.result."""
from rungs.core.result import RungResult, Status, Verdict, headline  # noqa: F401
