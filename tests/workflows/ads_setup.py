"""Where the ads workflow tests find the recipe, and how much data they draw."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "ads_analytics.craft"
SOLUTIONS = REPO / "examples" / "ads" / "solutions"
DATA_SEEDS = (1, 2, 3)   # three generated warehouses
PARAM_SETS = 5           # instances per workflow and warehouse
SCALE = 1.0              # the generator's default small warehouse (~30k daily rows)
