"""A small XML Schema checker for the subset of XSD that ``junit.xsd`` uses.

Reads the schema itself (global and local ``xs:element``, named and anonymous
``xs:complexType``, ``xs:sequence``/``xs:choice`` with ``minOccurs``/``maxOccurs``,
``xs:attribute`` with ``use`` and the types string/integer/decimal/dateTime,
``xs:simpleContent`` extensions) and checks a document against it: the root element, every
element's attributes (required present, none unknown, values of their type), its children
(allowed, in sequence order, within their occurrence bounds) and text only where the type
allows it. Returns a list of problems (empty: valid).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from xml.etree import ElementTree

XS = "{http://www.w3.org/2001/XMLSchema}"
_UNBOUNDED = 1 << 30


@dataclass
class Particle:
    """One slot of a content model: an element, or a choice between elements."""

    names: dict[str, ElementSpec]
    min_occurs: int
    max_occurs: int


@dataclass
class ElementSpec:
    name: str
    attributes: dict[str, tuple[str, bool]] = field(default_factory=dict)
    particles: list[Particle] = field(default_factory=list)
    text: bool = False


def _occurs(node: ElementTree.Element, name: str) -> int:
    value = node.get(name, "1")
    return _UNBOUNDED if value == "unbounded" else int(value)


class Schema:
    def __init__(self, path: Path) -> None:
        root = ElementTree.parse(path).getroot()
        self.types = {t.get("name", ""): t for t in root.findall(f"{XS}complexType")}
        self.roots = {e.get("name", ""): self._element(e) for e in root.findall(f"{XS}element")}

    def _element(self, node: ElementTree.Element) -> ElementSpec:
        spec = ElementSpec(name=node.get("name", ""))
        type_name = node.get("type")
        if type_name is not None and type_name.startswith("xs:"):
            spec.text = True
            return spec
        complex_type = self.types[type_name] if type_name else node.find(f"{XS}complexType")
        if complex_type is not None:
            self._complex(complex_type, spec)
        return spec

    def _complex(self, node: ElementTree.Element, spec: ElementSpec) -> None:
        for child in node:
            if child.tag == f"{XS}attribute":
                spec.attributes[child.get("name", "")] = (
                    child.get("type", "xs:string"),
                    child.get("use") == "required",
                )
            elif child.tag == f"{XS}sequence":
                self._sequence(child, spec)
            elif child.tag == f"{XS}simpleContent":
                spec.text = True
                extension = child.find(f"{XS}extension")
                if extension is not None:
                    self._complex(extension, spec)

    def _sequence(self, node: ElementTree.Element, spec: ElementSpec) -> None:
        for child in node:
            if child.tag == f"{XS}element":
                element = self._element(child)
                spec.particles.append(
                    Particle(
                        {element.name: element},
                        _occurs(child, "minOccurs"),
                        _occurs(child, "maxOccurs"),
                    )
                )
            elif child.tag == f"{XS}choice":
                options = {
                    e.get("name", ""): self._element(e) for e in child.findall(f"{XS}element")
                }
                spec.particles.append(
                    Particle(options, _occurs(child, "minOccurs"), _occurs(child, "maxOccurs"))
                )

    def validate(self, document: Path) -> list[str]:
        root = ElementTree.parse(document).getroot()
        if root.tag not in self.roots:
            return [f"root element <{root.tag}> is not one of {sorted(self.roots)}"]
        problems: list[str] = []
        _check(root, self.roots[root.tag], root.tag, problems)
        return problems


def _value_ok(kind: str, value: str) -> bool:
    if kind == "xs:integer":
        return re.fullmatch(r"[+-]?\d+", value) is not None
    if kind == "xs:decimal":
        return re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", value) is not None
    if kind == "xs:dateTime":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return False
        return "T" in value
    return True


def _check(node: ElementTree.Element, spec: ElementSpec, where: str, problems: list[str]) -> None:
    for name, (kind, required) in spec.attributes.items():
        value = node.get(name)
        if value is None:
            if required:
                problems.append(f"{where}: missing required attribute {name!r}")
        elif not _value_ok(kind, value):
            problems.append(f"{where}: attribute {name}={value!r} is not {kind}")
    for name in node.attrib:
        if name not in spec.attributes:
            problems.append(f"{where}: attribute {name!r} is not allowed")
    if not spec.text and (node.text or "").strip():
        problems.append(f"{where}: text is not allowed")
    children = list(node)
    index = 0
    for slot, particle in enumerate(spec.particles):
        count = 0
        while index < len(children) and children[index].tag in particle.names:
            child = children[index]
            _check(child, particle.names[child.tag], f"{where}/{child.tag}[{index}]", problems)
            count += 1
            index += 1
        if count < particle.min_occurs:
            problems.append(
                f"{where}: slot {slot} {sorted(particle.names)} needs {particle.min_occurs}"
            )
        if count > particle.max_occurs:
            problems.append(
                f"{where}: {sorted(particle.names)} at most {particle.max_occurs}, got {count}"
            )
    for child in children[index:]:
        problems.append(f"{where}: element <{child.tag}> not allowed here")
