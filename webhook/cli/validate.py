"""`feedbackstore-webhook validate PATH...`: the verdict for GitOps pipelines. An unreadable input
outweighs invalid stores in the exit code (a pipeline must not pass on a file it never checked),
yet every readable document is still checked and reported."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, Final

import yaml

from webhook.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.cli.manifest_files import (
    DECLARING_KINDS,
    STDIN,
    Document,
    ReadError,
    Skipped,
    objects,
    read_all,
)
from webhook.cli.repository_layout import Patches, chart_template, partial
from webhook.cli.validate_output import RENDERERS
from webhook.cli.validate_report import ChangeWarning, Report, Result, locate
from webhook.kube.objects import metadata_of
from webhook.rules.field_path import Path
from webhook.rules.forms import INLINE, STORE, Form
from webhook.rules.manifest import check_manifest, declaring_form, is_agentdeployment

# Set by `kustomize build` with `buildMetadata: [originAnnotations]`: a YAML mapping whose `path`
# (with `repo` for a remote base) names the file someone edits, not the built stream.
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
DELETED: Final = (
    "FeedbackStore deleted: the gateway cannot read it, so it answers 403 to the scores of the "
    "agents that reference it"
)
# A declaration `--previous` matches by kind, namespace and name: its source, its node, its
# object and its form.
_Named = tuple[str, yaml.Node | None, dict[str, Any], Form]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check FeedbackStore manifests offline (files, directories, - for stdin)",
        description=(
            "Check every FeedbackStore, and every AgentDeployment's spec.feedback, in YAML/JSON "
            "files (multi-document files, directories recursively: *.yaml, *.yml, *.json; - "
            "reads stdin) with the same rules as the admission webhook. Other kinds, and "
            "AgentDeployments without spec.feedback, are skipped. Helm chart templates, kustomize "
            "patches and files that are not YAML or JSON and name neither kind are not judged, "
            f"with a note on stderr. Exit {EXIT_OK}: all valid; "
            f"{EXIT_PROBLEMS}: some invalid; {EXIT_UNUSABLE}: some input could not be read or "
            "parsed."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or -")
    parser.add_argument(
        "-o", "--output", choices=tuple(RENDERERS), default="text", help="output format"
    )
    parser.add_argument(
        "--warnings-as-errors",
        action="store_true",
        help="count a FeedbackStore (or an agent's spec.feedback) with warnings as invalid",
    )
    # One path a flag, repeated for more (as `kubectl -f`): `nargs="+"` would take every path
    # after it, so `--previous old.yaml new.yaml`, as people type it, left no path to check.
    parser.add_argument(
        "--previous",
        action="append",
        metavar="PATH",
        help="a previous version (file, directory or -; repeat for more): warn of what the "
        "change does to score ingestion, per FeedbackStore (or AgentDeployment's spec.feedback) "
        "matched by kind, namespace and name",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out files and directories whose path (as given or found) or name matches "
        "GLOB (`*` spans `/`); repeat for more",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = Report()
    patches = Patches()
    current: list[Document] = []  # for --previous: what was read
    for read in read_all(args.paths, args.exclude, chart_template):
        if (document := admitted(read, report, patches)) is None:
            continue
        for content, node in objects(document.content, document.node):
            _check(document, content, node, report, args.warnings_as_errors)
        if args.previous:
            current.append(document)
    changes: list[ChangeWarning] | None = None
    if args.previous:
        changes, unreadable = change_warnings(current, args.previous, args.exclude, patches)
        report.errors.extend(unreadable)
    sys.stdout.flush()
    sys.stdout.buffer.write(RENDERERS[args.output](report, changes))
    sys.stdout.flush()
    for note in report.notes:
        print(f"feedbackstore-webhook: note: {note}", file=sys.stderr)
    for error in report.errors:
        print(f"feedbackstore-webhook: error: {error}", file=sys.stderr)
    code = report.exit_code()
    return EXIT_PROBLEMS if code == EXIT_OK and changes and args.warnings_as_errors else code


def admitted(
    read: Document | ReadError | Skipped, report: Report, patches: Patches
) -> Document | None:
    """The document to judge, or None: an unreadable input (an error, or a note when it names
    no kind we judge), a file not read, a kustomize patch (notes, once per file)."""
    if isinstance(read, Skipped):
        report.notes.append(read)
        return None
    if isinstance(read, ReadError):
        if read.names_a_kind:
            report.errors.append(read)
        else:
            report.notes.append(Skipped(read.source, _unparsed(read)))
        return None
    if read.source != STDIN and _declares(read) and (why := patches.why(read.source)):
        if all(note.source != read.source for note in report.notes):  # notes are few
            report.notes.append(Skipped(read.source, why))
        return None
    return read


def _check(
    document: Document, content: object, node: yaml.Node | None, report: Report, strict: bool
) -> None:
    if content is None:
        return  # an empty document (a stray `---`) is nothing at all
    if not isinstance(content, dict) or (form := declaring_form(content)) is None:
        report.skipped += 1
        return
    if why := partial(content):
        report.skipped += 1
        report.notes.append(Skipped(document.source, why, document.index))
        return
    report.results.append(result_of(document, content, node, strict, form))


def _unparsed(error: ReadError) -> str:
    line = f" (line {error.line})" if error.line is not None else ""
    return f"{error.message}{line}, and it names no {' or '.join(DECLARING_KINDS)}"


def _declares(document: Document) -> bool:
    """Whether a document declares a store: only then is it worth asking whether it is a patch
    (the question reads every kustomization of the repository once)."""
    return any(
        isinstance(content, dict) and declaring_form(content) is not None
        for content, _ in objects(document.content, document.node)
    )


def result_of(
    document: Document,
    obj: dict[str, Any],
    node: yaml.Node | None,
    strict: bool = False,
    form: Form = STORE,
) -> Result:
    """A declaration's verdict placed in its source (what `migrate` prints of a store too)."""
    checked = check_manifest(obj, form)
    kept = node if checked.verdict.problems or checked.verdict.warnings else None
    return Result(document.source, document.index, checked, strict, kept, origin(obj),
                  locate(node, Path()))  # fmt: skip


def origin(manifest: dict[str, Any]) -> str | None:
    annotations = metadata_of(manifest).get("annotations")
    text = annotations.get(ORIGIN_ANNOTATION) if isinstance(annotations, dict) else None
    try:
        value: Any = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None
    path = value.get("path") if isinstance(value, dict) else None
    if not isinstance(path, str):
        return None
    repo = value.get("repo")
    return f"{repo}//{path}" if isinstance(repo, str) and repo else path


def change_warnings(
    current: Sequence[Document],
    previous: Sequence[str],
    exclude: Sequence[str] = (),
    patches: Patches | None = None,
) -> tuple[list[ChangeWarning], list[ReadError]]:
    """`--previous`: each change from a declaration in `previous` to the same kind and
    namespace/name in `current` (stdin is read once), said as the webhook says it on UPDATE, at
    the changed value; a store gone is a warning where it stood (an agent gone, or without
    spec.feedback now, is not: the webhook is not asked either). And the unreadable inputs."""
    from webhook.rules.change_messages import change_sentence
    from webhook.rules.changes import changed_fields, spec_changes

    # the previous versions are read as the current ones are: what is not judged there is
    # no declaration that changed or went (its notes are said of the current files)
    seen = Report()
    patches = patches or Patches()
    read = [admitted(each, seen, patches) for each in read_all(previous, exclude, chart_template)]
    before = _by_label([each for each in read if each is not None], previous=True)
    now = _by_label(current)
    warnings: list[ChangeWarning] = []
    for key, (old_source, old_node, old, form) in before.items():
        label = key[1]
        if key not in now:
            if form is STORE:
                warnings.append(
                    ChangeWarning(old_source, locate(old_node, Path()), label, "", DELETED)
                )
            continue
        source, node, new, _ = now[key]
        spec = form.declaration(new)
        changes = spec_changes(form.declaration(old), spec)
        warnings += [
            ChangeWarning(source, locate(node, field), label, str(field), change_sentence(change),
                          form.kind)
            for change, field in zip(changes, changed_fields(changes, spec, form.path), strict=True)
        ]  # fmt: skip
    return warnings, seen.errors


def _by_label(
    documents: Sequence[Document], *, previous: bool = False
) -> dict[tuple[str, str], _Named]:
    """Each named declaration by kind and `namespace/name` (the first of a name wins); with
    `previous`, agents without spec.feedback too (a declaration added is no change to say)."""
    found: dict[tuple[str, str], _Named] = {}
    for document in documents:
        for obj, node in objects(document.content, document.node):
            if not isinstance(obj, dict) or not (label := _label(obj)):
                continue
            form = declaring_form(obj) or (INLINE if previous and is_agentdeployment(obj) else None)
            if form is not None and not partial(obj):
                found.setdefault((form.kind, label), (document.source, node, obj, form))
    return found


def _label(store: dict[str, Any]) -> str | None:
    metadata = metadata_of(store)
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
