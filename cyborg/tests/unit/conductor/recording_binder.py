"""A stand-in for the conductor's Binder, for tests of what records binds."""


class RecordingBinder:
    """Records the batches submitted to it and claims nothing: binds are
    recorded alone (tests of the claim made as a bind is recorded use the
    real ``cyborg.conductor.binder.Binder``)."""

    def __init__(self):
        self.submitted = []

    def lease(self, now):
        return None

    def claim_recorded(self, context, arq_uuids, now):
        return None

    def submit(self, arq_uuids, claimed=None):
        self.submitted.append(sorted(arq_uuids))
