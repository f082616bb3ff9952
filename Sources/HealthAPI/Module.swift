// HealthAPI module: filled in by its issue.
enum HealthAPIModule {}
