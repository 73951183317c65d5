"""Team memory: a shared store's event files and what reads, applies and exchanges them.

The storage layer captures a write's changes and writes its event file
(storage/event_log.py) and runs no git; everything else about sharing lives here, one
job a module, in import order:

* ``schema``: the event schema every reader checks an event against, whole;
* ``git``: every git command (reading commits, where hooks live, a purge's files out
  of the index and whether history holds them);
* ``apply``: applying checked events in any order, in chunks or each in its savepoint;
* ``exchange``: importing events, the history as events (export), the canonical state;
* ``sync``: the events folder and the cache (sync, rebuild, files removed by a
  checkout, purged files taken out again);
* ``share``: sharing an existing store (``init --shared``);
* ``hooks``: git commits as memories (``hooks record``, ``hooks backfill``);
* ``hook_install``: installing and removing the git hooks (scripts in ``git_hooks/``).

Nothing is imported here: ``nervamem hooks record`` runs on every commit and loads only
the modules it needs.
"""
