"""The second layer: a secret value a job got hold of anyway never reaches the host's consumers.

Job processes never see the host's environment (test_hostile_code), so here the code
builds the value itself (as a model that memorised a key could write it), and the pool
cuts it out of everything the run brings back.
"""

from __future__ import annotations

from collections import Counter

import pytest

from runtime.sandbox.redact import MIN_SECRET_CHARS, Redactor, secret_values
from runtime.sandbox.result import ExecResult
from sandbox_support import HOST_SECRETS, everything_returned, pool_under_host_secrets

KEY, DSN = HOST_SECRETS["OPENAI_API_KEY"], HOST_SECRETS["CRAFT_TEST_DB_DSN"]


def _spelled_out(value: str) -> str:
    """Python that rebuilds `value` without the value appearing in the code."""
    return "(" + " + ".join(repr(value[i:i + 3]) for i in range(0, len(value), 3)) + ")"


@pytest.fixture(scope="module")
def secrets_pool(warehouse):
    with pool_under_host_secrets(warehouse) as pool:
        yield pool


def test_secret_looking_names_and_listed_names_are_picked_and_short_values_left():
    environ = {"OPENAI_API_KEY": KEY, "hf_token": "hf_abcdefghij", "DB_PASSWORD": "short", "MY_SECRET_X": "12345678",
               "CRAFT_TEST_DB_DSN": DSN, "HOME": "/root/a/long/home", "KEYBOARD": "us-intl-altgr"}
    assert secret_values(["CRAFT_TEST_DB_DSN"], environ) == {
        "CRAFT_TEST_DB_DSN": DSN, "KEYBOARD": "us-intl-altgr", "MY_SECRET_X": "12345678", "OPENAI_API_KEY": KEY,
        "hf_token": "hf_abcdefghij"}
    assert len("short") < MIN_SECRET_CHARS


def test_a_secret_in_the_result_stdout_error_and_api_calls_is_redacted(secrets_pool):
    code = f"""
key, dsn = {_spelled_out(KEY)}, {_spelled_out(DSN)}
print('the key is', key)
api.calls.append(key)
result = pd.DataFrame({{'k': [key, 'ok'], key: ['column', 'name'], 'n': [[key, 'x'], ['y']],
                        'b': [key.encode(), b'-'], 'dsn': [dsn, 'plain']}})
"""
    run = secrets_pool.run(code)
    assert run.ok, run.error_message
    returned = everything_returned(run)
    assert KEY not in returned and DSN not in returned
    assert run.redacted == ("CRAFT_TEST_DB_DSN", "OPENAI_API_KEY")
    frame = run.result_frame
    assert list(frame.columns) == ["k", "[redacted:OPENAI_API_KEY]", "n", "b", "dsn"]
    assert frame["k"].tolist() == ["[redacted:OPENAI_API_KEY]", "ok"]
    assert list(frame["n"][0]) == ["[redacted:OPENAI_API_KEY]", "x"]
    assert frame["b"][0] == b"[redacted:OPENAI_API_KEY]"
    assert frame["dsn"].tolist() == ["[redacted:CRAFT_TEST_DB_DSN]", "plain"]
    assert "the key is [redacted:OPENAI_API_KEY]" in run.stdout_tail
    assert "[redacted:OPENAI_API_KEY]" in run.result_preview and run.api_calls[-1] == "[redacted:OPENAI_API_KEY]"


def test_a_secret_in_an_error_message_is_redacted(secrets_pool):
    run = secrets_pool.run(f"raise ValueError('bad key ' + {_spelled_out(KEY)})")
    assert run.error_class == "RuntimeError" and KEY not in run.error_message
    assert "bad key [redacted:OPENAI_API_KEY]" in run.error_message and run.redacted == ("OPENAI_API_KEY",)


def test_the_pool_counts_what_it_redacted(warehouse):
    with pool_under_host_secrets(warehouse) as pool:
        assert pool.redactions == {}
        pool.run("result = 1")
        assert pool.redactions == {}
        pool.run_many([f"print({_spelled_out(KEY)} * 2)\nresult = {_spelled_out(DSN)}"] * 3)
        assert pool.redactions == {"CRAFT_TEST_DB_DSN": 3, "OPENAI_API_KEY": 6}


def test_a_result_without_secrets_is_passed_through_untouched():
    result = ExecResult(ok=True, result_preview="42", stdout_tail="fine")
    assert Redactor({"API_KEY": "sk-0123456789"}).result(result, b"\x00arrow bytes") is result
    assert Redactor({}).result(result) is result


def test_a_value_inside_another_is_replaced_whole():
    redactor = Redactor({"SHORT_KEY": "abcdefgh", "LONG_TOKEN": "xx-abcdefgh-yy"})
    found = Counter()
    assert redactor.text("xx-abcdefgh-yy and abcdefgh", found) == "[redacted:LONG_TOKEN] and [redacted:SHORT_KEY]"
    assert found == {"LONG_TOKEN": 1, "SHORT_KEY": 1}
