// HTTPServer module: filled in by its issue.
enum HTTPServerModule {}
