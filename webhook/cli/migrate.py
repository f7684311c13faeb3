"""`feedbackstore-webhook migrate PATH...`: from the older form (an AgentDeployment naming a
FeedbackStore in `spec.feedbackStoreRef`) to the inline one (`spec.feedback`, the platform's
newest API), in the manifests a GitOps repository holds. Only what the inputs prove is migrated:
a store must be among them and valid (its problems are printed as `validate` prints them); a
store no agent of the inputs references any more is named as removable, never deleted. An
unreadable input stops everything before a byte is written: it may hold the agents that still
need a store.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from webhook.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.cli.manifest_edit import (
    Edit,
    apply,
    document_text,
    render_block,
    render_json,
    replace_entry,
    whole_document,
)
from webhook.cli.manifest_files import STDIN, Document, ReadError, objects, parse_text, read_all
from webhook.cli.validate import result_of
from webhook.cli.validate_output import text_lines
from webhook.cli.validate_report import Report, locate
from webhook.kube.objects import metadata_of
from webhook.rules import api, inuse
from webhook.rules.field_errors import type_invalid
from webhook.rules.field_path import Path
from webhook.rules.forms import FEEDBACK_FIELD
from webhook.rules.manifest import is_agentdeployment, is_feedbackstore
from webhook.text import counted

REF: Final = "feedbackStoreRef"
_REF_PATH: Final = api.SPEC.child(REF)
_WHOLE: Final = Path()  # the object itself
# Where kubectl puts an object without metadata.namespace when the context names none.
DEFAULT_NAMESPACE: Final = "default"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="move FeedbackStores into the AgentDeployments that reference them (spec.feedback)",
        description=(
            "For every AgentDeployment with spec.feedbackStoreRef whose FeedbackStore (same "
            "namespace) is among the inputs (files, directories, - for stdin), write the agent "
            "with spec.feedback set to that store's spec and feedbackStoreRef removed. Stores "
            "no agent of the inputs references any more are named as removable on stderr, never "
            "deleted. Prints the changed documents as multi-document YAML, or with --in-place "
            f"rewrites the files, changing nothing else in them. Exit {EXIT_OK}: all migrated; "
            f"{EXIT_PROBLEMS}: some agent not migrated (its store is missing from the inputs or "
            f"invalid); {EXIT_UNUSABLE}: some input could not be read (nothing is written)."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or -")
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="rewrite the files instead of printing the changed documents (not with -)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default=DEFAULT_NAMESPACE,
        help="the namespace of objects without metadata.namespace, as kubectl's -n "
        "(default: %(default)s)",
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class Found:
    """An AgentDeployment or FeedbackStore of the inputs, in the namespace it will live in."""

    document: Document
    content: dict[str, Any]
    node: yaml.Node | None
    namespace: str
    name: str
    kind: str

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    def at(self, path: Path = _WHOLE) -> str:
        where = locate(self.node, path)
        return f"{self.document.source}:{where.line}:{where.column}"

    def said(self, path: Path, message: str) -> str:
        """`FILE:LINE:COL: Kind ns/name: field: message`, as `validate` places a line."""
        parts = [f"{self.kind} {self.namespace}/{self.name}", str(path), message]
        return f"{self.at(path)}: " + ": ".join(part for part in parts if part)


@dataclass(slots=True)
class Plan:
    """What the inputs allow: each agent to migrate with its store, and what to tell the user."""

    migrated: list[tuple[Found, Found]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    invalid_stores: Report = field(default_factory=Report)
    notes: list[str] = field(default_factory=list)
    removable: list[Found] = field(default_factory=list)


def gather(documents: Iterable[Document], namespace: str) -> tuple[list[Found], list[Found]]:
    """The named agents and stores of the inputs (nameless ones cannot be referenced)."""
    agents: list[Found] = []
    stores: list[Found] = []
    for document in documents:
        for content, node in objects(document.content, document.node):
            if not isinstance(content, dict):
                continue
            if is_agentdeployment(content):
                found, kind = agents, inuse.AGENT_KIND
            elif is_feedbackstore(content):
                found, kind = stores, "FeedbackStore"
            else:
                continue
            metadata = metadata_of(content)
            name, where = metadata.get("name"), metadata.get("namespace")
            if isinstance(name, str) and name:
                where = where if isinstance(where, str) and where else namespace
                found.append(Found(document, content, node, where, name, kind))
    return agents, stores


def plan(agents: Sequence[Found], stores: Sequence[Found]) -> Plan:
    result = Plan()
    by_key: dict[tuple[str, str], list[Found]] = defaultdict(list)
    for store in stores:
        by_key[store.key].append(store)
    valid: dict[tuple[str, str], bool] = {}
    referenced: dict[tuple[str, str], int] = defaultdict(int)
    for agent in agents:
        spec = agent.content.get("spec")
        ref = spec.get(REF) if isinstance(spec, dict) else None
        if ref is None:
            continue
        target = (agent.namespace, ref) if isinstance(ref, str) else None
        if target is not None:
            referenced[target] += 1
        refusal = _refusal(agent, spec, ref, by_key, valid, result.invalid_stores)
        if refusal is not None:
            result.refused.append(agent.said(_REF_PATH, f"{refusal} (not migrated)"))
            continue
        assert target is not None
        result.migrated.append((agent, by_key[target][0]))
    _tell(result, referenced)
    return result


def _refusal(
    agent: Found, spec: Any, ref: object, by_key: dict[tuple[str, str], list[Found]],
    valid: dict[tuple[str, str], bool], invalid_stores: Report,
) -> str | None:  # fmt: skip
    """Why `agent` cannot be migrated, or None."""
    if ref == "":
        return "empty: it names no FeedbackStore"
    if not isinstance(ref, str):
        return type_invalid(_REF_PATH, ref, "string").message
    if FEEDBACK_FIELD in spec and spec[FEEDBACK_FIELD] is not None:
        return f"spec.{FEEDBACK_FIELD} is already set beside it: keep one of the two by hand"
    label = f"FeedbackStore {agent.namespace}/{ref}"
    candidates = by_key.get((agent.namespace, ref), [])
    if not candidates:
        return f"{label} is not among the inputs: add the file that declares it"
    if len(candidates) > 1:
        places = ", ".join(store.at() for store in candidates)
        return f"{label} is declared {len(candidates)} times ({places}): keep one"
    store = candidates[0]
    if store.key not in valid:
        checked = result_of(store.document, store.content, store.node)
        valid[store.key] = checked.valid
        if not checked.valid:
            invalid_stores.results.append(checked)
    if not valid[store.key]:
        return f"{label} is invalid ({store.at()}, problems above): fix it, then migrate again"
    return None


def _tell(result: Plan, referenced: dict[tuple[str, str], int]) -> None:
    """Each migration, each store copied more than once, each store left unreferenced."""
    by_store: dict[tuple[str, str], list[Found]] = defaultdict(list)
    stores: dict[tuple[str, str], Found] = {}
    for agent, store in result.migrated:
        by_store[store.key].append(agent)
        stores[store.key] = store
        source = f"FeedbackStore {store.namespace}/{store.name} ({store.at()})"
        result.notes.append(
            agent.said(_REF_PATH, f"now spec.{FEEDBACK_FIELD}, the spec of {source}")
        )
    for key, copies in by_store.items():
        store = stores[key]
        if len(copies) > 1:
            names = ", ".join(agent.name for agent in copies)
            copied = (
                f"copied into {counted(len(copies), inuse.AGENT_KIND)} ({names}): each now "
                "holds its own declaration; a later change is made in each"
            )
            result.notes.append(store.said(_WHOLE, copied))
        if referenced[key] == len(copies):
            result.removable.append(store)
            removable = (
                f"removable: no {inuse.AGENT_KIND} of the inputs references it any more "
                "(migrate deletes nothing; agents outside the inputs may still name it)"
            )
            result.notes.append(store.said(_WHOLE, removable))


# -- writing ------------------------------------------------------------------------------


def migrated_agent(agent: dict[str, Any], store_spec: object) -> dict[str, Any]:
    """The agent with `feedback` where `feedbackStoreRef` was, in the same place."""
    spec: dict[str, Any] = {}
    for key, value in agent["spec"].items():
        if key == REF:
            spec[FEEDBACK_FIELD] = copy.deepcopy(store_spec)
        else:
            spec[key] = value
    return {**agent, "spec": spec}


def _replaced(content: object, new: dict[int, dict[str, Any]]) -> object:
    """`content` with the objects `new` names (by identity) replaced, into `kind: List`s too."""
    if id(content) in new:
        return new[id(content)]
    if isinstance(content, dict) and isinstance(content.get("items"), list):
        items = content["items"]
        changed = [_replaced(item, new) for item in items]
        if any(a is not b for a, b in zip(changed, items, strict=True)):
            return {**content, "items": changed}
    return content


@dataclass(slots=True)
class Rewrite:
    """One source's documents as they must decode, and the edits that make its text so."""

    source: str
    text: str
    documents: list[Document]
    expected: list[object]
    edits: dict[int, list[Edit]] = field(default_factory=dict)  # by document index
    whole: list[str] = field(default_factory=list)  # what was written whole, and why


def rewrites(result: Plan, documents: Sequence[Document]) -> list[Rewrite]:
    new_by_doc: dict[tuple[str, int], dict[int, dict[str, Any]]] = defaultdict(dict)
    for agent, store in result.migrated:
        new = migrated_agent(agent.content, store.content.get("spec"))
        new_by_doc[(agent.document.source, agent.document.index)][id(agent.content)] = new
    by_source: dict[str, Rewrite] = {}
    for document in documents:
        changed = new_by_doc.get((document.source, document.index))
        rewrite = by_source.get(document.source)
        if rewrite is None:
            rewrite = by_source[document.source] = Rewrite(document.source, document.text, [], [])
        rewrite.documents.append(document)
        rewrite.expected.append(_replaced(document.content, changed or {}))
        if changed:
            rewrite.edits[document.index] = _edits(document, rewrite, result)
    return [r for r in by_source.values() if r.edits]


def _edits(document: Document, rewrite: Rewrite, result: Plan) -> list[Edit]:
    """The surgical edits of one document, proven by parsing; else the document written whole."""
    expected = rewrite.expected[len(rewrite.documents) - 1]
    edits: list[Edit] = []
    for agent, store in result.migrated:
        if agent.document is not document:
            continue
        edit = _surgery(agent, store.content.get("spec"), document.text)
        if edit is None:
            edits = []
            break
        edits.append(edit)
    node = document.node
    if edits and node is not None and _decodes_to(document, node, edits, expected):
        return edits
    json_source = document.source.endswith(".json")
    rewrite.whole.append(f"{document.source}: document {document.index}")
    if document.node is None:  # JSON YAML could not compose: the source is this one document
        text = whole_document_text(expected, json_source)
        return [Edit(0, len(document.text), text)]
    return [whole_document(document.node, expected, json=json_source)]


def whole_document_text(content: object, json_source: bool) -> str:
    rendered = render_json(content, 0, pretty=True) if json_source else render_block(content, 0, 2)
    return rendered + "\n"


def _surgery(agent: Found, store_spec: object, text: str) -> Edit | None:
    spec_pair = _pair(agent.node, "spec")
    if spec_pair is None or not isinstance(spec_pair[1], yaml.MappingNode):
        return None
    return replace_entry(text, spec_pair[0], spec_pair[1], REF, FEEDBACK_FIELD, store_spec)


def _pair(node: yaml.Node | None, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    found = None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found = (key_node, value_node)
    return found


def _decodes_to(document: Document, node: yaml.Node, edits: list[Edit], expected: object) -> bool:
    """Whether the document's own text, edited, decodes to `expected` and nothing else."""
    parsed = list(parse_text(document.source, document_text(document.text, node, edits)))
    return len(parsed) == 1 and isinstance(parsed[0], Document) and parsed[0].content == expected


def _verified(rewrite: Rewrite) -> str | None:
    """The source's new text when it decodes to exactly the expected documents."""
    text = apply(rewrite.text, [edit for edits in rewrite.edits.values() for edit in edits])
    parsed = list(parse_text(rewrite.source, text))
    contents = [each.content for each in parsed if isinstance(each, Document)]
    if len(contents) != len(parsed) or contents != rewrite.expected:
        return None
    return text


def _write_in_place(rewrite: Rewrite, text: str) -> None:
    """Atomically, keeping the file's mode and byte-order mark; refused if it changed since."""
    with open(rewrite.source, "rb") as handle:
        raw = handle.read()
    bom = "\ufeff" if raw.startswith(b"\xef\xbb\xbf") else ""
    if raw.decode("utf-8-sig") != rewrite.text:
        raise OSError(f"{rewrite.source} changed while it was being migrated")
    directory = os.path.dirname(os.path.abspath(rewrite.source))
    mode = os.stat(rewrite.source).st_mode & 0o7777
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".migrate-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(bom + text)
        os.chmod(temporary, mode)
        os.replace(temporary, rewrite.source)
    except BaseException:
        os.unlink(temporary)
        raise


def _changed_documents(rewrites_: Sequence[Rewrite]) -> str:
    texts = []
    for rewrite in rewrites_:
        for document in rewrite.documents:
            edits = rewrite.edits.get(document.index)
            if not edits:
                continue
            if document.node is None:
                texts.append(apply(document.text, edits).rstrip("\n"))
            else:
                texts.append(document_text(document.text, document.node, edits).rstrip("\n"))
    return "".join(f"---\n{text}\n" for text in texts)


def run(args: argparse.Namespace) -> int:
    if args.in_place and STDIN in args.paths:
        print("migrate: --in-place cannot rewrite stdin (-)", file=sys.stderr)
        return EXIT_UNUSABLE
    documents: list[Document] = []
    errors: list[ReadError] = []
    for read in read_all(args.paths):
        (errors if isinstance(read, ReadError) else documents).append(read)  # type: ignore[arg-type]
    documents = once_each(documents)
    if errors:
        for error in errors:
            print(f"feedbackstore-webhook: error: {error}", file=sys.stderr)
        print("migrate: nothing written: every input must be readable", file=sys.stderr)
        return EXIT_UNUSABLE
    agents, stores = gather(documents, args.namespace)
    result = plan(agents, stores)
    _say(text_lines(result.invalid_stores))
    _say(result.refused)
    _say(result.notes)
    changed = rewrites(result, documents)
    for rewrite in changed:
        _say(f"{where}: written whole from its object (comments in it are not kept)"
             for where in rewrite.whole)  # fmt: skip
    code = _output(changed, args.in_place)
    print(f"migrate: {_summary(result)}", file=sys.stderr)
    if code != EXIT_OK:
        return code
    return EXIT_PROBLEMS if result.refused else EXIT_OK


def _output(changed: Sequence[Rewrite], in_place: bool) -> int:
    if not in_place:
        sys.stdout.write(_changed_documents(changed))
        sys.stdout.flush()
        return EXIT_OK
    code = EXIT_OK
    for rewrite in changed:
        text = _verified(rewrite)
        if text is None:
            print(f"migrate: {rewrite.source}: not rewritten: the result would not decode to "
                  "the migrated objects (please report this)", file=sys.stderr)  # fmt: skip
            code = EXIT_PROBLEMS
            continue
        try:
            _write_in_place(rewrite, text)
        except OSError as error:
            print(f"migrate: {rewrite.source}: cannot rewrite: {error.strerror or error}",
                  file=sys.stderr)  # fmt: skip
            code = EXIT_UNUSABLE
    return code


def once_each(documents: Sequence[Document]) -> list[Document]:
    """Each file's documents once, however often the paths name it (`deploy/ deploy/a.yaml`):
    a file read twice would declare its stores twice and be rewritten twice."""
    read: set[str] = set()
    kept = []
    keep = True
    for document in documents:
        if document.index == 1:  # a read of a source begins
            source = document.source
            real = source if source == STDIN else os.path.realpath(source)
            keep = real not in read
            read.add(real)
        if keep:
            kept.append(document)
    return kept


def _say(lines: Iterable[str]) -> None:
    for line in lines:
        print(line, file=sys.stderr)


def _summary(result: Plan) -> str:
    return (
        f"{counted(len(result.migrated), inuse.AGENT_KIND)} migrated, "
        f"{len(result.refused)} not migrated, "
        f"{counted(len(result.removable), 'FeedbackStore')} removable"
    )
