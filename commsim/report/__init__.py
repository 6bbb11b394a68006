"""Renderings of results: tables for people, JSON and CSV for scripts."""

from commsim.report.tables import results_csv, results_json, results_table, winners_table

__all__ = ["results_csv", "results_json", "results_table", "winners_table"]
