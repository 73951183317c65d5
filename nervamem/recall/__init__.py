"""Recall: what best answers a query, within a token budget."""
