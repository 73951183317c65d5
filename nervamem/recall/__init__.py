"""Recall: what best answers a query, within a token budget (docs/recall.md).

One module per concept, imports flowing one way (a module imports only those above
it in this list; none imports the CLI or a renderer):

    mask.py             the temporal mask: which nodes may be shown as of a moment
    tokens.py           token counters: what the budget is measured with
    terms.py            query terms, key terms and stop words
    irregular.py        irregular English verbs: a query's base form, a memory's past
    node_cache.py       node rows, degrees and neighbours kept between recalls (SQLite)
    candidates.py       node rows, the Candidate they become, degree and session lookups
    text_analysis.py    a text's words, the roots of terms and where they start in it
    relevance.py        how well a hit's text answers the query (IDF, BM25 norm, ...)
    search.py           the hits: one pipeline of term lookups and the prefix stage over
                        the engine's text index (storage/text_index.py)
    questions.py        a memory that asks is answered by the one after it
    session_context.py  what was recorded next to a hit in its session
    expansion.py        graph neighbours of the best candidates, over the engine's
                        graph reads (storage/graph_reads.py)
    sessions_rank.py    a session node ranks below the memories found
    topics.py           a query that names a topic is answered by the decision about it
    when.py             a question that asks for a time is answered by a memory that says when
    passages.py         a long memory's passage: the window that holds the query's words
    scoring.py          relevance x recency x frequency x connectivity; the top k
    packing.py          the Markdown of a recall, packed within the budget
    validation.py       what recall and timeline refuse
    access_counts.py    the access count a recall adds to what it returns
    api.py              run_recall: the pipeline of the steps above
    timeline.py         run_timeline: every version of what matches

Rules a reader must not break:
* User text is data, never query syntax: it reaches the text index as terms, which
  each engine quotes (FTS5) or binds.
* The temporal mask applies to search hits, session context and expanded neighbours
  alike (mask.py).
* Nothing crosses a namespace: every query filters by it.
* No module here asks which engine it is on or imports an engine's module: what
  differs is a capability of the Storage, the text index or the graph reads
  (tests/test_architecture.py, the import contracts in pyproject.toml).
* The Markdown of a recall measures at most its budget under the configured counter
  (packing.py).

Nothing is imported here: codegraph.py needs only the mask, and a module is loaded
when a command needs it (``store`` loads none of this package).
"""
