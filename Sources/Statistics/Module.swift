// Statistics module: filled in by its issue.
enum StatisticsModule {}
