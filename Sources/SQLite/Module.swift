// SQLite module: filled in by its issue.
enum SQLiteModule {}
