// Pedometer module: filled in by its issue.
enum PedometerModule {}
