"""The FeedbackStore API as a typed, declarative pydantic model.

The same API as the verdict's walk, stated as types with defaults: the CRD's
OpenAPI schema is generated from it and the verdict is property-tested
against it. Both read their limits from `api.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from webhook.rules import api

ScoreName = Annotated[
    str,
    Field(
        min_length=api.MIN_NAME_LENGTH,
        max_length=api.MAX_NAME_LENGTH,
        description="The Langfuse score name; the attribution key, unique across the store.",
    ),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


class ScoreDecl(_Strict):
    """One score name an agent accepts, with its data type."""

    name: ScoreName
    data_type: api.DataType = Field(
        default=api.DEFAULT_DATA_TYPE,
        alias="dataType",
        description="How the score's value is interpreted.",
    )
    categories: list[str] | None = Field(
        default=None,
        max_length=api.MAX_CATEGORIES,
        description="Allowed labels of a CATEGORICAL score (a set).",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class HumanSource(_Strict):
    """Scores given by people through the platform's own feedback channel."""

    scores: list[ScoreDecl] = Field(
        min_length=api.MIN_HUMAN_SCORES,
        max_length=api.MAX_HUMAN_SCORES,
        description="The score names people may submit.",
    )


class ExternalChannel(_Strict):
    """An external system (e.g. a CSAT webhook) that writes exactly one score."""

    name: ScoreName = Field(description="The channel name, unique in the store.")
    score: ScoreDecl


class FeedbackStoreSpec(_Strict):
    """Which feedback score names an agent accepts, and from which source."""

    mode: api.Mode = Field(
        default=api.DEFAULT_MODE,
        description="Enforce rejects undeclared score names; Monitor accepts and counts them.",
    )
    human: HumanSource | None = None
    external: list[ExternalChannel] | None = Field(
        default=None,
        max_length=api.MAX_EXTERNAL_CHANNELS,
        description="External channels (e.g. a CSAT webhook), each writing exactly one score.",
    )


def json_names(model: type[BaseModel]) -> frozenset[str]:
    """The keys an object of `model` may carry in JSON (aliases where declared)."""
    return frozenset(field.alias or name for name, field in model.model_fields.items())


# Fields each object may carry; anything else is a typo the user must hear about.
SPEC_FIELDS: Final = json_names(FeedbackStoreSpec)
HUMAN_FIELDS: Final = json_names(HumanSource)
SCORE_FIELDS: Final = json_names(ScoreDecl)
CHANNEL_FIELDS: Final = json_names(ExternalChannel)


def _drop_nulls(value: Any) -> Any:
    """Kubernetes drops null object fields on decode; do the same before typing."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def typed_spec(spec: dict[str, Any]) -> FeedbackStoreSpec:
    """The typed view of a spec with defaults applied (raises pydantic.ValidationError).

    Per-field limits only: the cross-field invariants belong to the verdict.
    """
    return FeedbackStoreSpec.model_validate(_drop_nulls(spec))
