"""The code graph and the TOUCHES bridge from memories to the code they are about.

Three parts:

* **Index** (:func:`indexing.index_code`, ``nervamem code index``): parse the repository's
  source files (Python with :mod:`ast`; Go, Rust, Java, TypeScript and JavaScript with
  the tree-sitter grammars of the ``code`` extra, :mod:`treesitter`) and write
  ``graph.graphml`` beside the store with NetworkX — one node per module, class,
  function and method, and struct, interface, trait, enum, impl... (``file_path``
  relative to the folder that holds ``.nervapack/``, ``start_line``, ``end_line``,
  ``qualname``, ``kind``, ``name``, ``module`` and ``source_hash``), ``CONTAINS``
  edges. Module nodes also carry the file's mtime, size and hash, so a re-index
  re-parses only the files that changed.
* **Anchor** (:func:`anchors.anchor_entities`, called by ``MemoryStore.store`` inside its write
  transaction): entity names are matched against the graph — bare names (``load``) or
  qualified ones (``Loader.load``, ``pkg.util.load``, ``pkg/util.py``) — after the same
  separator-and-case normalisation as entity aliases (``AuthService`` = ``auth_service``),
  applied to each dotted segment. Each match adds a ``TOUCHES`` edge from the memory to
  the entity; the edge's data records the anchors as they were at that moment, the
  entity's data records the latest ones (``file_path``, ``start_line``, ``end_line``,
  ``graph_node_id``, ``source_hash``, ``anchors``). A bare name that matches several
  symbols is anchored to each and reported as ambiguous.
* **Query** (:mod:`queries`): :func:`code_for` (memories about a file or a line),
  :func:`code_to` (where a memory is anchored) and :func:`verify_staleness`.

Staleness strategy: verification re-reads the source files as they are now and parses
them (:mod:`parsing`); it never trusts the graph, so it is right even when nobody ran
``code index`` since the code changed. An anchor's ``source_hash`` is computed by
nervamem itself from the live file at anchoring time (the graph's hash is used only when
the file is provably unchanged since indexing), so graphs made by other tools work too.
A memory is stale when an anchor's file is gone (``file missing``), no longer parses
(``file does not parse``), no longer defines the symbol (``symbol removed``) or defines
it with different source text (``source changed``; moving it to other lines is not a
change).

Invariants a reader must not break:

* ``store`` and ``recall`` never import tree-sitter on a Python-only tree, nor for a
  file unchanged since the index (its anchor comes from the graph).
* ``store`` and ``recall`` never import NetworkX: lookups go through a small SQLite
  sidecar (``graph-index.sqlite``) keyed by the graph file's mtime, size and inode,
  rebuilt from the GraphML with :mod:`xml.etree` when the graph changes. Only writing the
  graph imports NetworkX.
* A missing graph means no TOUCHES, silently; an unreadable graph means no TOUCHES and a
  warning, never a failed ``store``.
* The graph reader is tolerant: any GraphML whose nodes carry ``file_path`` works;
  missing optional attributes are derived or left empty, line numbers may be strings.
* The core never prints: warnings travel in :class:`AnchorReport`.
* ``store`` and ``recall`` never import this package unless a graph exists beside the
  store (``locate.graph_path_beside``): then ``store`` imports :mod:`anchors` lazily.

Modules, each importing only those above it (none imports the CLI or the renderers):

* :mod:`values` — the frozen dataclasses returned, and the staleness reasons;
* :mod:`languages` — which suffix is which language, and its grammar package;
* :mod:`symbols` — Python source to symbols and their hashes;
* :mod:`treesitter_nodes` — the node helpers the tree-sitter walkers share;
* :mod:`treesitter` — Go, Rust, Java, TypeScript, JavaScript source to the same symbols;
* :mod:`parsing` — a file to its symbols in whichever language;
* :mod:`files` — which source files a repository has, and the paths recorded;
* :mod:`names` — how an entity name matches a symbol (lookup keys);
* :mod:`graph_file` — reading and writing ``graph.graphml``;
* :mod:`sidecar` — the SQLite lookup index beside it (:class:`CodeIndex`);
* :mod:`indexing` — ``code index``: building both;
* :mod:`live` — the source files as they are now (:class:`LiveSource`);
* :mod:`anchors` — TOUCHES edges and anchor records;
* :mod:`queries` — ``code-for``, ``code-to`` and ``verify-staleness``.

No names are re-exported here: import each from its module.
"""
