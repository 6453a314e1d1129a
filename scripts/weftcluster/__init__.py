"""Weft's cluster tooling: boot and drive clusters of Weft VMs joined by
weft-switch (scripts/weft-cluster is its command line, tests/cluster its
scenarios).  Standard library only; docs/cluster.md describes it.

  rundir   the run directory and the ownership checks of what is read there
  state    a cluster's saved settings (cluster.json)
  chan     the command channel: the daemon and its client
  cluster  a cluster: its switch, its VMs and their nodes
  cli      the weft-cluster command
  testing  the cluster scenarios' framework (tests/cluster/run.py)
"""
