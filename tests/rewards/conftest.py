"""A three-entity ads schema and helpers to write agent turns by hand."""

import pytest

from craftc.ir import Entity, EntityField, EntityKey, EntityRef, FieldType, Metric, Schema
from runtime.agent import ExecRecord, ModelCall, UserTurn
from runtime.rewards import SchemaTerms


def _field(name, kind="int", column=None):
    return EntityField(name=name, type=FieldType(kind=kind), column=column or name)


@pytest.fixture(scope="session")
def schema():
    return Schema(name="ads", version=1, source="ads.craft", entities=(
        Entity(name="Advertiser", table="adw.adv_dim", view="advertiser",
               key=EntityKey(name="id", column="advertiser_id"),
               fields=(_field("name", "string", "adv_name"), _field("industry", "string", "industry_cd"))),
        Entity(name="Campaign", table="adw.campaign_dim", view="campaign",
               key=EntityKey(name="id", column="campaign_id"),
               fields=(_field("name", "string", "campaign_nm"),),
               refs=(EntityRef(name="advertiser", target="Advertiser", column="advertiser_id"),)),
        Entity(name="DailyStat", table="adw.fact_daily", view="daily_stat",
               key=EntityKey(name="id", column="stat_id"),
               fields=(_field("clicks"), _field("impressions"), _field("day", "date")),
               refs=(EntityRef(name="campaign", target="Campaign", column="campaign_id"),)),
    ), metrics=(Metric(name="ctr", expr="sum(DailyStat.clicks) / sum(DailyStat.impressions)",
                       sql="sum(clicks) / sum(impressions)", entities=("DailyStat",)),))


@pytest.fixture(scope="session")
def terms(schema):
    return SchemaTerms.from_schema(schema)


def turn_text(plan, code):
    return f"<THINK>\nwhy\n</THINK>\n<PLAN>\n{plan}\n</PLAN>\n<CODE>\n{code}\n</CODE>"


def call(plan="Count campaigns.", code="result = api.query('SELECT count(*) AS n FROM campaign')",
         ok=True, well_formed=True, discovery=0, api_calls=()):
    return ModelCall(input_tokens=10, text=turn_text(plan, code), plan=plan, code=code,
                     well_formed=well_formed, exec=ExecRecord(ok=ok, api_calls=tuple(api_calls)),
                     discovery_calls=discovery)


def user_turn(*calls, final_ok=None):
    calls = list(calls)
    ok = calls[-1].exec.ok if final_ok is None else final_ok
    return UserTurn(index=0, ask="q", calls=calls, final_ok=ok,
                    final_code=calls[-1].code if ok else None, final_plan=calls[-1].plan if ok else None)
