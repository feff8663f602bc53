"""The pattern library: load `patterns/*.yaml` (`loading`), check annotations against it
(`checking`: DD050-DD053), render them (`rendering`): one call of the generated check module
per annotation, or a template's statements. The generated code never imports anything from
`generator`: the output package does not depend on dd.
"""

from generator.config import builtin_pattern_dir
from generator.patterns.checking import Arg, bind_args, check_annotation, parse_call_args
from generator.patterns.loading import (
    CONTEXT_NAMES,
    EXC_PARAM,
    RESERVED_CHECK_NAMES,
    PatternLibrary,
    check_names,
)
from generator.patterns.rendering import (
    condition_names,
    negation,
    raise_statement,
    render,
    render_annotation,
)

__all__ = [
    "CONTEXT_NAMES",
    "EXC_PARAM",
    "RESERVED_CHECK_NAMES",
    "Arg",
    "PatternLibrary",
    "bind_args",
    "builtin_pattern_dir",
    "check_annotation",
    "check_names",
    "condition_names",
    "negation",
    "parse_call_args",
    "raise_statement",
    "render",
    "render_annotation",
]
