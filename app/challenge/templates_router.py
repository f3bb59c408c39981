"""Challenge templates, for tenant admins: challenges of each kind that work as they are,
offline, to start from (`"template"` in a body of `POST /v1/challenges`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import Field

from app.auth.gate import TenantAdminDep
from app.challenge.challenge_kind import ChallengeTemplate
from app.challenge.router import KindFilter
from app.challenge.templates import all_templates, find_template
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset, OutputSchema, page_of

router = APIRouter(prefix="/v1/challenge-templates", tags=["challenges"], route_class=ApiRoute)


class ChallengeTemplateRead(OutputSchema):
    name: str = Field(examples=["prompt-injection"])
    kind: str
    title: str
    description: str
    body: dict[str, Any] = Field(
        description="The challenge body it stands for, without `slug` and `title`: send "
        '`{"template": name, "title": ...}` (and any field to change) to `POST '
        "/v1/challenges`, or this body with a title."
    )
    test_run: dict[str, Any] = Field(
        description="A body for `POST /v1/challenges/{id}/test-runs` that shows the challenge "
        "working."
    )

    @classmethod
    def of(cls, template: ChallengeTemplate) -> ChallengeTemplateRead:
        return cls(
            name=template.name,
            kind=template.kind,
            title=template.title,
            description=template.description,
            body=dict(template.body),
            test_run=dict(template.test_run),
        )


class ChallengeTemplateList(OutputSchema):
    items: list[ChallengeTemplateRead]
    total: int
    limit: int
    offset: int


TemplateName = Annotated[str, Path(min_length=1, max_length=100, examples=["prompt-injection"])]


@router.get("")
def list_challenge_templates(
    caller: TenantAdminDep, limit: Limit = 50, offset: Offset = 0, kind: KindFilter = None
) -> ChallengeTemplateList:
    """The templates (tenant admin), each kind's default first, the kinds in their order."""
    items, total = page_of(all_templates(kind), limit, offset)
    return ChallengeTemplateList(
        items=[ChallengeTemplateRead.of(t) for t in items], total=total, limit=limit, offset=offset
    )


@router.get("/{template_name}")
def get_challenge_template(
    template_name: TemplateName, caller: TenantAdminDep
) -> ChallengeTemplateRead:
    return ChallengeTemplateRead.of(find_template(template_name))
