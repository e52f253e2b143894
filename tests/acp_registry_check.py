"""Checks an ACP Registry entry folder (agent.json, icon.svg) as the registry's CI does:
the JSON schema (tests/fixtures/acp-registry/agent.schema.json), the id naming the folder,
binary URLs pinned to the entry's version (no /latest/), and a 16x16 monochrome icon
(fill and stroke only currentColor, none or inherit). Rules from the registry's
CONTRIBUTING.md ("Validation"). Prints one line per problem; exit status 1 when any.

    python3 tests/acp_registry_check.py ENTRY_DIR SCHEMA VERSION
"""

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema


def problems(entry_dir: Path, schema_path: Path, version: str) -> list[str]:
    out = []
    entry = json.loads((entry_dir / "agent.json").read_text())
    schema = json.loads(schema_path.read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    for err in sorted(validator.iter_errors(entry), key=str):
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"schema: {where}: {err.message}")
    if entry.get("id") != entry_dir.name:
        out.append(f"id {entry.get('id')!r} does not name the folder {entry_dir.name!r}")
    if entry.get("version") != version:
        out.append(f"version {entry.get('version')!r} is not the crate's {version!r}")
    for platform, target in entry.get("distribution", {}).get("binary", {}).items():
        url = target.get("archive", "")
        if "/latest/" in url:
            out.append(f"{platform}: the archive URL uses /latest/: {url}")
        if f"/download/v{version}/" not in url:
            out.append(f"{platform}: the archive URL is not the release v{version}: {url}")
        if target.get("args") != ["acp"]:
            out.append(f"{platform}: args must be [\"acp\"] (bb7 acp)")
    icon = entry_dir / "icon.svg"
    root = ET.fromstring(icon.read_text())
    size = (root.get("width"), root.get("height"))
    if size != ("16", "16") or root.get("viewBox", "0 0 16 16").split()[2:] != ["16", "16"]:
        out.append(f"icon: not 16x16 (width, height = {size}, viewBox {root.get('viewBox')})")
    uses_current = False
    for el in root.iter():
        for attr in ("fill", "stroke"):
            value = el.get(attr)
            if value is None:
                continue
            if value == "currentColor":
                uses_current = True
            elif value not in ("none", "inherit"):
                out.append(f"icon: {attr}={value!r} is a hardcoded colour")
        style = el.get("style") or ""
        for m in re.finditer(r"(fill|stroke)\s*:\s*([^;]+)", style):
            if m.group(2).strip() not in ("currentColor", "none", "inherit"):
                out.append(f"icon: style {m.group(0)!r} is a hardcoded colour")
    if not uses_current:
        out.append("icon: no fill or stroke uses currentColor")
    return out


if __name__ == "__main__":
    found = problems(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
    for p in found:
        print(p)
    sys.exit(1 if found else 0)
