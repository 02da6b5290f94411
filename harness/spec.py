"""Moved to rungs/core/spec.py (the neutral floor both packages import); kept so branches written against the old
path still import. New code imports rungs.core.spec."""
from rungs.core.spec import *  # noqa: F401,F403
from rungs.core.spec import Budgets, TaskSpec, load_callable, load_task  # noqa: F401
