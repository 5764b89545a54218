"""Why a decision went as it did, as an open vocabulary: a reason is a string that results files and traces record,
registered once by name with what it means, so that a rule of a user's own can give a reason of its own and the
file that records it still reads back (``GateReason``, ``StopReason``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Reason")


class ReasonKind(type):
    """The type of a reason vocabulary: iterating it lists its reasons in the order they were registered."""

    def __iter__(cls) -> Iterator[Any]:
        return iter(cls._known.values())  # type: ignore[attr-defined]

    def __len__(cls) -> int:
        return len(cls._known)  # type: ignore[attr-defined]


class Reason(str, metaclass=ReasonKind):
    """A registered reason: equal to its string and written to JSON as it.  ``Kind("value")`` is the registered
    reason of that value (one object per value, so ``is`` compares), a ``ValueError`` naming the known ones
    otherwise; :meth:`register` adds one.

    Attributes:
        doc: What it means, in words.
    """

    _known: ClassVar[dict[str, Reason]] = {}
    noun: ClassVar[str] = "reason"
    """What a message calls one of this vocabulary."""
    doc: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._known = {}

    def __new__(cls: type[R], value: str) -> R:
        known = cls._known.get(str(value))
        if known is None:
            names = ", ".join(repr(str(r)) for r in cls._known.values())
            raise ValueError(
                f"unknown {cls.noun} {value!r}; the registered ones are {names}. A reason of your own is "
                f"registered with {cls.__name__}.register(value, doc, ...) where your rule is defined"
            )
        return known  # type: ignore[return-value]

    @classmethod
    def register(cls: type[R], value: str, doc: str, **meaning: Any) -> R:
        """Register ``value`` with what it means (``doc``, and the vocabulary's own attributes such as
        ``GateReason``'s ``retrieves``); registering it again with the same meaning returns the same reason."""
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{cls.__name__}.register: the value must be a non-empty string, got {value!r}")
        known = cls._known.get(value)
        if known is not None:
            if known.meaning() == {"doc": doc, **meaning}:
                return known  # type: ignore[return-value]
            raise ValueError(
                f"{cls.__name__} {value!r} is registered with another meaning ({known.meaning()}): give yours a "
                "value of its own"
            )
        reason = str.__new__(cls, value)
        reason.doc = doc
        for key, val in meaning.items():
            setattr(reason, key, val)
        cls._known[value] = reason
        return reason

    def meaning(self) -> dict[str, Any]:
        """What was registered with this reason."""
        return dict(vars(self))

    @property
    def value(self) -> str:
        """The recorded string."""
        return str(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self),)  # copies and pickles are the registered reason itself

    def __copy__(self) -> Reason:
        return self

    def __deepcopy__(self, memo: Any) -> Reason:
        return self
