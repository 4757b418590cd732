"""The results report: a paper-style table against the stuffed baseline, and plots."""

from runtime.report.plots import plot_metric_bars, plot_training_curves
from runtime.report.step import build_report, render_markdown, rich_table, run_report
from runtime.report.table import PUBLISHED_RATIOS, ROWS, build_table, markdown_table

__all__ = ["PUBLISHED_RATIOS", "ROWS", "build_report", "build_table", "markdown_table", "plot_metric_bars",
           "plot_training_curves", "render_markdown", "rich_table", "run_report"]
