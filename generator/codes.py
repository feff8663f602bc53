"""The table of diagnostic codes. One place, so FORMAT.md, the checker and the tests agree."""

from __future__ import annotations

CODES: dict[str, str] = {
    # front matter and sections
    "DD001": "front matter missing or not valid YAML",
    "DD002": "front matter field missing or invalid",
    "DD010": "required section missing",
    "DD011": "section duplicated",
    "DD012": "section out of order or unknown number",
    # module / class / method specs
    "DD020": "module heading invalid",
    "DD021": "module declared twice or two modules share a path",
    "DD022": "spec heading outside a module, or invalid spec heading",
    "DD023": "module outside the document's package",
    "DD030": "spec has no python code block",
    "DD031": "syntax error in spec code",
    "DD032": "spec code is not a single definition with a signature",
    "DD033": "docstring missing",
    "DD034": "name in heading does not match the definition",
    "DD035": "class spec defines methods (give each method its own spec)",
    "DD036": "method spec names a class that has no class spec",
    "DD037": "module prelude invalid (syntax error or definitions that need a spec)",
    "DD040": "duplicate name",
    "DD041": "`deps:` field missing",
    "DD042": "`deps:` names an unknown spec",
    "DD043": "cyclic `deps:`",
    "DD044": "`deps:` value malformed",
    # annotations
    "DD050": "unknown pattern ID",
    "DD051": "pattern arguments are not Python expressions",
    "DD052": "pattern arguments do not match the pattern's parameters",
    "DD053": "annotation kind does not match the pattern (VAL vs AST)",
    "DD054": "malformed annotation comment",
    "DD055": "annotation outside a function body",
    # fields
    "DD060": "unknown or duplicated field",
    # implementation plan (Section 6)
    "DD070": "step heading invalid or step numbers not 1..N in order",
    "DD071": "step field missing or invalid",
    "DD072": "step lists an unknown spec",
    "DD073": "spec belongs to no step",
    "DD074": "spec listed in more than one step",
    "DD075": "step depends on an unknown or later step",
    "DD076": "cyclic step dependencies",
    "DD077": "spec depends on a spec of a step that is not the same or a depended-on earlier step",
    "DD078": "step too large (more than 10 specs) or empty",
    "DD079": "step status inconsistent with its dependencies",
    "DD080": "version changed without a revision-history entry",
    # pattern library and generation
    "DD090": "pattern library file invalid",
    "DD091": "pattern template failed to render valid Python",
    "DD095": "generated module invalid",
    # writing
    "DD100": "generated file was edited by hand",
    "DD101": "file exists but is not managed by dd",
}
