"""A six-campaign warehouse with the catalog the Ads API reads, for agent-side tests."""

from pathlib import Path

import duckdb

ROWS = [(1, "Spring Sale", 1, 100.0), (2, "Summer Trip", 2, 250.0), (3, "Autumn Deals", 1, 80.0),
        (4, "Winter Fly", 2, 300.0), (5, "City Break", 2, 120.0), (6, "Home Goods", 1, 60.0)]


def make_warehouse(path: Path) -> Path:
    """Write the warehouse (physical tables, logical views, catalog) to ``path``."""
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA adw")
    con.execute("CREATE TABLE adw.cmp (cid INT, cname VARCHAR, adv INT, budget_micros BIGINT)")
    con.executemany("INSERT INTO adw.cmp VALUES (?, ?, ?, ?)",
                    [(i, n, a, int(b * 1e6)) for i, n, a, b in ROWS])
    con.execute("CREATE TABLE adw.adv (aid INT, aname VARCHAR, ind VARCHAR)")
    con.execute("INSERT INTO adw.adv VALUES (1, 'Acme Home', 'retail'), (2, 'Fly Far', 'travel')")
    con.execute("CREATE VIEW campaign AS SELECT cid AS id, cname AS name, adv AS advertiser_id, "
                "budget_micros * 1e-6 AS daily_budget FROM adw.cmp")
    con.execute("CREATE VIEW advertiser AS SELECT aid AS id, aname AS name, ind AS industry FROM adw.adv")
    con.execute("CREATE SCHEMA craft_meta")
    con.execute("CREATE TABLE craft_meta.entities (view VARCHAR, entity VARCHAR, doc VARCHAR, "
                "table_name VARCHAR, position INT)")
    con.execute("INSERT INTO craft_meta.entities VALUES ('advertiser', 'Advertiser', 'Who pays', 'adw.adv', 0), "
                "('campaign', 'Campaign', 'A budgeted set of ads', 'adw.cmp', 1)")
    con.execute("CREATE TABLE craft_meta.fields (view VARCHAR, field VARCHAR, type VARCHAR, doc VARCHAR, "
                "nullable BOOLEAN, \"references\" VARCHAR, column_name VARCHAR, view_position INT, position INT)")
    fields = [("advertiser", "id", "id", "aid", 0, 0), ("advertiser", "name", "string", "aname", 0, 1),
              ("advertiser", "industry", "string", "ind", 0, 2), ("campaign", "id", "id", "cid", 1, 0),
              ("campaign", "name", "string", "cname", 1, 1), ("campaign", "advertiser_id", "id", "adv", 1, 2),
              ("campaign", "daily_budget", "money", "budget_micros", 1, 3)]
    con.executemany("INSERT INTO craft_meta.fields VALUES (?, ?, ?, '', false, NULL, ?, ?, ?)", fields)
    con.close()
    return path


TOP_CODE = ("df = api.query('SELECT name, daily_budget FROM campaign ORDER BY daily_budget DESC')\n"
            "result = df.head({n})")
TRAVEL_CODE = ("df = api.query(\"SELECT c.name, c.daily_budget FROM campaign c JOIN advertiser a "
               "ON a.id = c.advertiser_id WHERE a.industry = 'travel' ORDER BY c.daily_budget DESC\")\n"
               "result = df.head({n})")


def task_dict(n: int = 2, instance_id: str = "top_budget-0") -> dict:
    """A two-turn conversation in the dataset step's instance format."""
    same_rows = [{"kind": "same_rows_as_solution", "ordered": True}]
    return {
        "workflow": "top_budget", "instance_id": instance_id, "params": {"n": n},
        "turns": [
            {"ask": f"Top {n} campaigns by budget", "phrasing_index": 0, "phrasings": 1,
             "plan": f"Rank campaigns by daily budget and keep {n}.", "code": TOP_CODE.format(n=n),
             "expectations": same_rows},
            {"ask": "Only travel advertisers", "phrasing_index": 0, "phrasings": 1,
             "plan": f"Keep campaigns of travel advertisers, rank by budget, keep {n}.",
             "code": TRAVEL_CODE.format(n=n), "expectations": same_rows},
        ],
    }


def assistant(plan: str, code: str) -> str:
    return f"<THINK>\nthink\n</THINK>\n<PLAN>\n{plan}\n</PLAN>\n<CODE>\n{code}\n</CODE>"
