// JSON module: filled in by its issue.
enum JSONModule {}
