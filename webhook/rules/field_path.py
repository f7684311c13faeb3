"""Field paths as a value: apimachinery's `field.Path`, a root and its children and indexes.

The rules build a path as they walk a declaration (`spec`, then `.human`,
`.scores`, `[1]`, `.name`), and every adapter reads it back: the webhook and the
status writer as the text kube-apiserver prints (`spec.human.scores[1].name`),
the CLI as the keys and indexes that lead to a node of the YAML it read. So a
path is kept as its steps and rendered only when said, never parsed back
from its text (a key may itself hold a dot or a bracket).
"""

from __future__ import annotations

Step = str | int


class Path:
    """An immutable path: `Path("spec").child("human").child("scores").index(1)`.

    Linked to its parent, so a step costs one small object; its text and steps are worked out
    when first asked for and kept, so siblings share their parent's.
    """

    # `_text` is None and `_steps` unset until asked for.
    __slots__ = ("_parent", "_step", "_steps", "_text")

    _parent: Path | None
    _step: Step | None
    _steps: tuple[Step, ...]
    _text: str | None

    def __init__(self, *names: str) -> None:
        """The path of `names` from the root (`Path()` is the root itself, which renders empty)."""
        parent: Path | None = None
        step: Step | None = None
        for name in names:
            if step is not None:
                parent = _linked(parent, step)
            step = name
        self._parent = parent
        self._step = step
        self._text = None

    def child(self, name: str) -> Path:
        """The field `name` of the object at this path."""
        return _linked(self, name)

    def index(self, position: int) -> Path:
        """The item at `position` of the list at this path."""
        return _linked(self, position)

    def at(self, step: Step) -> Path:
        """`child(step)` for a name, `index(step)` for a position."""
        return _linked(self, step)

    @property
    def parent(self) -> Path:
        """The path one step up; the root's parent is the root."""
        return self._parent if self._parent is not None else _ROOT

    @property
    def steps(self) -> tuple[Step, ...]:
        """The field names (str) and indexes (int) from the root down to this path."""
        steps: tuple[Step, ...] | None = getattr(self, "_steps", None)
        if steps is None:
            head = () if self._parent is None else self._parent.steps
            steps = head if self._step is None else (*head, self._step)
            self._steps = steps
        return steps

    def __str__(self) -> str:
        """As kube-apiserver prints it: `spec.human.scores[1].name`."""
        text = self._text
        if text is None:
            parent, step = self._parent, self._step
            head = "" if parent is None else (parent._text or str(parent))
            if isinstance(step, int):
                text = f"{head}[{step}]"
            elif step is None:
                text = head
            else:
                text = f"{head}.{step}" if head else step
            self._text = text
        return text

    def __repr__(self) -> str:
        return f"Path({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and self.steps == other.steps

    def __hash__(self) -> int:
        return hash(self.steps)


def _linked(parent: Path | None, step: Step) -> Path:
    """A step below `parent`, made without `__init__`'s loop."""
    path = _new(Path)
    path._parent = parent
    path._step = step
    path._text = None
    return path


_new = object.__new__
_ROOT = Path()
