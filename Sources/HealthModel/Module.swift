// HealthModel module: filled in by its issue.
enum HealthModelModule {}
