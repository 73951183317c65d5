"""Team memory: a shared store's event files and what reads, applies and exchanges them.

The storage layer captures a write's changes and writes its event file
(storage/event_log.py); everything else about sharing lives here, one job a module:
the event schema (schema.py), syncing the cache with the folder (sync.py), recording
git commits (hooks.py) and installing the git hooks (hook_install.py).

Nothing is imported here: ``nervamem hooks record`` runs on every commit and loads only
the module it needs.
"""
