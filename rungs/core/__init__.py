"""The bottom floor both packages import: task spec, expressions, YAML loading, errors, rung results, file imports
and atomic writes. Nothing here imports from `harness/` or from the rest of `rungs/`.

Kept free of imports itself: the worker imports `rungs.core.imports`, `rungs.core.atomic` and `rungs.worker.job` in a
bare sandbox, and must not pay for (or need) pydantic, which `spec`, `yamlload` and `result` use.
"""
