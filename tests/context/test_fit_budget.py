"""fit_budget: priority-ordered fitting; L0-L2 never dropped; omissions reported."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from air.context import DEFAULT_LAYER_PRIORITIES, fit_budget, render_layer
from air.context.tokens import estimate_tokens
from air.contracts.runtime import PromptLayer, PromptLayerLevel

IMMUTABLE = {
    PromptLayerLevel.RUNTIME_INVARIANT,
    PromptLayerLevel.ROLE,
    PromptLayerLevel.SAFETY,
}


def layer(
    level: PromptLayerLevel, tokens: int, ref: str, priority: int | None = None
) -> PromptLayer:
    return PromptLayer(
        level=level,
        priority=DEFAULT_LAYER_PRIORITIES[level] if priority is None else priority,
        content="x" * (tokens * 4),
        token_estimate=tokens,
        source_ref=ref,
        immutable=level in IMMUTABLE,
    )


def test_everything_fits_nothing_omitted() -> None:
    layers = [
        layer(PromptLayerLevel.RUNTIME_INVARIANT, 10, "l0"),
        layer(PromptLayerLevel.TASK_SPEC, 10, "l5"),
    ]
    fit = fit_budget(layers, 20)
    assert [x.source_ref for x in fit.kept] == ["l0", "l5"]
    assert fit.omitted == []
    assert fit.token_estimate == 20
    assert not fit.over_budget


def test_lowest_priority_goes_first_and_smaller_ones_use_the_room() -> None:
    layers = [
        layer(PromptLayerLevel.RUNTIME_INVARIANT, 10, "l0"),
        layer(PromptLayerLevel.PROJECT_RULES, 30, "rules"),
        layer(PromptLayerLevel.EVIDENCE, 50, "evidence"),
        layer(PromptLayerLevel.CONVERSATION, 5, "msg-old"),
        layer(PromptLayerLevel.CONVERSATION, 5, "msg-new"),
        layer(PromptLayerLevel.USER_OVERRIDE, 20, "l9"),
    ]
    fit = fit_budget(layers, 68)
    # 10 (L0) + 20 (L9) + 30 (rules) = 60; evidence (50) does not fit; then the newest
    # conversation message (ties: later first) takes 5; the older one no longer fits in 68.
    assert [x.source_ref for x in fit.kept] == ["l0", "rules", "msg-new", "l9"]
    assert [(o.source_ref, o.reason, o.token_estimate) for o in fit.omitted] == [
        ("evidence", "budget", 50),
        ("msg-old", "budget", 5),
    ]
    assert fit.token_estimate == 65
    assert fit.dropped_levels == {PromptLayerLevel.EVIDENCE, PromptLayerLevel.CONVERSATION}


def test_immutable_layers_stay_even_over_budget() -> None:
    layers = [
        layer(PromptLayerLevel.RUNTIME_INVARIANT, 40, "l0"),
        layer(PromptLayerLevel.ROLE, 40, "l1"),
        layer(PromptLayerLevel.SAFETY, 40, "l2"),
        layer(PromptLayerLevel.USER_OVERRIDE, 1, "l9"),
    ]
    fit = fit_budget(layers, 100)
    assert [x.source_ref for x in fit.kept] == ["l0", "l1", "l2"]
    assert fit.over_budget
    assert fit.token_estimate == 120
    assert [o.source_ref for o in fit.omitted] == ["l9"]


def test_missing_estimates_are_computed_from_the_rendered_layer() -> None:
    bare = PromptLayer(level=PromptLayerLevel.EVIDENCE, priority=1, content="abcdefgh" * 10)
    fit = fit_budget([bare], 1000)
    assert fit.kept[0].token_estimate == estimate_tokens(render_layer(bare))
    assert fit.token_estimate == fit.kept[0].token_estimate


_levels = st.sampled_from(list(PromptLayerLevel))


@st.composite
def layer_sets(draw: st.DrawFn) -> list[PromptLayer]:
    count = draw(st.integers(min_value=0, max_value=25))
    out = []
    for index in range(count):
        level = draw(_levels)
        out.append(
            PromptLayer(
                level=level,
                priority=draw(st.integers(min_value=-5, max_value=1000)),
                content=f"layer {index}",
                token_estimate=draw(st.integers(min_value=0, max_value=400)),
                source_ref=f"ref-{index}",
                immutable=level in IMMUTABLE,
            )
        )
    return out


@settings(max_examples=300, deadline=None)
@given(layers=layer_sets(), budget=st.integers(min_value=0, max_value=3000))
def test_fit_never_exceeds_budget_unless_only_immutables_and_never_drops_them(
    layers: list[PromptLayer], budget: int
) -> None:
    fit = fit_budget(layers, budget)
    kept_refs = {x.source_ref for x in fit.kept}
    omitted_refs = [o.source_ref for o in fit.omitted]
    # every layer is either kept or omitted, exactly once
    assert sorted(r or "" for r in kept_refs | set(omitted_refs)) == sorted(
        x.source_ref or "" for x in layers
    )
    assert kept_refs.isdisjoint(omitted_refs)
    # never drops an immutable layer
    assert all(x.source_ref in kept_refs for x in layers if x.level in IMMUTABLE)
    assert all(o.level not in IMMUTABLE for o in fit.omitted)
    total = sum(x.token_estimate or 0 for x in fit.kept)
    assert fit.token_estimate == total
    if total > budget:
        assert all(x.level in IMMUTABLE for x in fit.kept)
        assert fit.over_budget
    # higher priority wins: an omitted layer never has a kept mutable layer of lower
    # priority that is at least as large (it would have been considered later and fit
    # only because the omitted one did not)
    for omission in fit.omitted:
        dropped = next(x for x in layers if x.source_ref == omission.source_ref)
        assert not any(
            x.level not in IMMUTABLE
            and x.priority < dropped.priority
            and (x.token_estimate or 0) >= (dropped.token_estimate or 0)
            for x in fit.kept
        )
    # kept layers keep their input order
    order = [x.source_ref for x in layers if x.source_ref in kept_refs]
    assert [x.source_ref for x in fit.kept] == order
