// HealthStore module: filled in by its issue.
enum HealthStoreModule {}
