"""The plan_code judge on a payments schema whose entity names are common words.

Price, Card, Charge and Plan are entities here, and the schema also uses each word for
something else: an enum value (`kind` `charge`), another entity's field (`card_brand`,
`list_price`, `plan_tier`). A business-level plan that says "charges", "cards", "prices"
or "plans" in their everyday sense must pass; one that names the entity as an
identifier (`Charge`, or its view in backticks) must still read it; an entity whose
word means nothing else (Merchant) is still required when the plan says "merchants".
"""

from __future__ import annotations

import pytest

from craftc.ir import Entity, EntityField, EntityKey, EntityRef, FieldType, Schema
from runtime.distill.judges import JudgeCase, PlanCodeJudge
from runtime.distill.vocabulary import SchemaVocabulary


def _entity(name: str, view: str, *fields: EntityField, refs: tuple = ()) -> Entity:
    return Entity(name=name, table=f"pay.{view}s", view=view, key=EntityKey(name="id", column=f"{view}_id"),
                  fields=fields, refs=refs)


def _field(name: str, kind: str = "string", values: tuple[str, ...] = ()) -> EntityField:
    return EntityField(name=name, type=FieldType(kind=kind, values=values), column=name)


PAYMENTS = Schema(name="payments", version=1, source="payments.craft", entities=(
    _entity("Merchant", "merchant", _field("business_name")),
    _entity("Product", "product", _field("product_name"), _field("list_price", "money")),
    _entity("Price", "price", _field("unit_amount", "money")),
    _entity("Plan", "plan", _field("plan_name")),
    _entity("Card", "card", _field("brand", "enum", ("visa", "amex"))),
    _entity("Charge", "charge", _field("amount", "money")),
    _entity("Subscription", "subscription", _field("plan_tier", "enum", ("basic", "pro"))),
    _entity("Payment", "payment", _field("amount", "money"), _field("card_brand"),
            _field("kind", "enum", ("charge", "refund")),
            refs=(EntityRef(name="merchant", target="Merchant", column="merchant_id"),)),
))
VOCAB = SchemaVocabulary.from_schema(PAYMENTS)
CODE = ('result = api.query("SELECT card_brand, sum(amount) AS total FROM payment '
        'WHERE kind = \'charge\' GROUP BY card_brand")')


def test_the_common_words_are_the_ones_the_schema_uses_for_something_else():
    assert VOCAB.common == {"Price", "Card", "Charge", "Plan"}


@pytest.mark.parametrize("plan", [
    "Sum the charges of each card brand, payments only.",
    "Total the payment amounts per card brand; cards without charges show nothing.",
    "Compare what customers on the pro plans paid against list prices, per card brand.",
    "Prices are in cents: add up the charges per card brand.",
])
def test_a_business_plan_may_say_charges_cards_prices_and_plans(plan):
    verdict = PlanCodeJudge(VOCAB).judge(JudgeCase("q", plan, CODE, {}))
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize("plan, missing", [
    ("Join each payment to its `charge` and total the amounts.", "charge"),
    ("Count the Charges behind each payment.", "charge"),
    ("Rank the Plans by what their payments total.", "plan"),
    ("Total the payments per merchant.", "merchant"),        # not a common word: still required
])
def test_an_entity_named_as_an_identifier_must_be_read(plan, missing):
    verdict = PlanCodeJudge(VOCAB).judge(JudgeCase("q", plan, CODE, {}))
    assert not verdict.passed
    assert f"never reads `{missing}`" in verdict.reason


def test_the_identifier_is_satisfied_by_reading_the_entity():
    code = 'result = api.query("SELECT count(*) AS n FROM charge JOIN payment USING (amount)")'
    assert PlanCodeJudge(VOCAB).judge(JudgeCase("q", "Count the Charges behind each payment.", code, {})).passed
