"""Moved to rungs/core/errors.py (the neutral floor both packages import); kept so branches written against the old
path still import. New code imports rungs.core.errors."""
from rungs.core.errors import *  # noqa: F401,F403
from rungs.core.errors import BadInput, HarnessError  # noqa: F401
