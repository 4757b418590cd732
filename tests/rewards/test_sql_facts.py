"""One rule for the SQL in agent code: the rewards, the distill judges and the compiler's
solution checks all read the same strings as SQL and the same facts from them.

Each case below is one where the readers used to disagree (see craftc/sql_facts.py).
"""

from __future__ import annotations

import pytest

from craftc.check.solution_sql import missing_reads
from craftc.sql_facts import code_sql_facts, literal_values, sql_strings
from runtime.distill.code_facts import code_facts
from runtime.rewards import SchemaTerms, code_entities, inspect_code

VIEWS = {"campaign": {"id", "name", "advertiser_id"}}


@pytest.fixture
def terms(schema):
    return SchemaTerms.from_schema(schema)


@pytest.mark.parametrize("code", [
    # The query a model comments is still the query it runs.
    'result = api.query("-- enabled ones\\nSELECT * FROM campaign")',
    # Built in a variable, run later: the name leads back to the string.
    'q = """-- enabled ones\nSELECT * FROM campaign"""\nresult = api.query(q)',
])
def test_every_reader_sees_a_query_that_does_not_start_with_select(code, terms):
    assert [s.sql.split("\n")[1] for s in sql_strings(code)] == ["SELECT * FROM campaign"]
    assert code_facts(code).tables == {"campaign"}
    assert code_entities(code, terms) == {"Campaign"}
    assert inspect_code(code).select_stars == 1


def test_a_view_read_with_api_table_counts_for_consistency(terms):
    assert code_entities('result = api.table("campaign")', terms) == {"Campaign"}


def test_an_f_string_is_one_query_and_its_pieces_are_not_queries_of_their_own():
    code = 'result = api.query(f"SELECT * FROM campaign{where}")'
    assert [s.sql for s in sql_strings(code)] == ["SELECT * FROM campaign__param__"]
    assert inspect_code(code).select_stars == 1
    assert code_facts(code).problems == []


def test_an_interpolated_value_is_not_a_literal_nor_a_column():
    code = 'n = 3\nresult = api.query(f"SELECT name FROM campaign WHERE clicks > {n}")'
    assert literal_values(code) == set()
    facts = code_facts(code)
    assert facts.columns == {"name", "clicks"} and facts.problems == []


def test_an_interpolated_table_is_left_out_rather_than_guessed():
    code = 'result = api.query(f"SELECT name FROM {view}")'
    assert code_sql_facts(code).tables == frozenset()
    assert code_facts(code).tables == set()


def test_sql_too_deep_for_sqlglot_is_a_problem_not_a_crash():
    code = 'result = api.query("SELECT ' + "(" * 3000 + "1" + ")" * 3000 + '")'
    assert inspect_code(code).parses
    assert literal_values(code) == set()
    assert any("SQL does not parse" in p for p in code_facts(code).problems)


def test_a_solution_s_f_string_query_is_checked_and_its_interpolations_are_not():
    text = 'result = api.query(f"SELECT {col} FROM campaign WHERE nmae = {n}")\n'
    assert [(r.view, r.column) for r in missing_reads(text, VIEWS)] == [("campaign", "nmae")]
