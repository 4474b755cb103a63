"""What ``clustergate site init`` needs: parsers of what a site's tools
print, the MPI probe, the benchmarks a site has, and the writer of
its configuration."""
