"""Where memories are kept: the engine, its schema and migrations, its files."""
