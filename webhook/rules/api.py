"""Identity and limits of the FeedbackStore API, stated once.

Every adapter (admission, status writer, CLI, CRD generator) reads these; a
limit changed here changes everywhere, which is the point of keeping them in
one place. The field names are the model's (`model.py`); what users read
about all of it is in `messages.py` here.
"""

from typing import Final, Literal, get_args

from webhook.rules.field_path import Path

GROUP: Final = "agents.ctxmesh.ai"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "FeedbackStore"
PLURAL: Final = "feedbackstores"
SINGULAR: Final = "feedbackstore"
SHORT_NAMES: Final = ("fs",)
CATEGORIES: Final = ("agents",)
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
# Where a FeedbackStore's declaration stands in it (the inline form's is `forms.INLINE`): the
# field's name, and the path every problem of the declaration stands under.
SPEC_PATH: Final = "spec"
SPEC: Final = Path(SPEC_PATH)

Mode = Literal["Enforce", "Monitor"]
DataType = Literal["NUMERIC", "BOOLEAN", "CATEGORICAL"]
MODES: Final[tuple[str, ...]] = get_args(Mode)
DATA_TYPES: Final[tuple[str, ...]] = get_args(DataType)
DEFAULT_MODE: Final = "Enforce"
DEFAULT_DATA_TYPE: Final = "NUMERIC"
MONITOR_MODE: Final = "Monitor"
CATEGORICAL: Final = "CATEGORICAL"

MIN_HUMAN_SCORES: Final = 1
MAX_HUMAN_SCORES: Final = 64
MAX_EXTERNAL_CHANNELS: Final = 32
MIN_NAME_LENGTH: Final = 1
MAX_NAME_LENGTH: Final = 128
MAX_CATEGORIES: Final = 64

# Kubernetes object metadata limits (apimachinery's IsDNS1123Subdomain / Label).
MAX_OBJECT_NAME_LENGTH: Final = 253
MAX_NAMESPACE_LENGTH: Final = 63

# Status condition vocabulary shared with the platform's own controller.
CONDITION_TYPE: Final = "Validated"
REASON_VALID: Final = "SpecCoherent"
REASON_INVALID: Final = "InvalidSpec"
# The status writer's own condition, which no other controller writes: the kstatus convention's
# "abnormal-true" `Stalled` (True: the spec is invalid, so kstatus computes Failed), with the
# reasons above and the writer's whole verdict, whoever writes `Validated` (the
# platform's operator writes it too, with its first problem only).
STALLED_CONDITION_TYPE: Final = "Stalled"

# How many problems one verdict keeps in full; the rest are only counted, so a
# hostile object with a million bad items costs counting, not memory.
MAX_RECORDED_PROBLEMS: Final = 1000
# Unknown fields named (with a `did you mean`) per object; the rest are counted, not judged:
# a typo is a key or two, and each name costs a fuzzy match while an object may carry a million.
MAX_UNKNOWN_FIELDS_NAMED: Final = 8
