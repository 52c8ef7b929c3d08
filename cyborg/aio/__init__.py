"""Parts of the all-in-one launcher (``cyborg-aio``): its options, the
embedded Placement and the in-process assembly of API, conductor and agent.

The console script itself is ``cyborg.cmd.aio``.
"""
