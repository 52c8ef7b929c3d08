"""A stand-in for the conductor's Binder, for tests of what records binds."""


class RecordingBinder:
    """Records the batches submitted to it and has nothing leased nor
    claimed: binds are recorded alone (tests of the claim made as a bind
    is recorded use the real ``cyborg.conductor.binder.Binder``)."""

    # What the conductor's bind_arqs hands arqs.record_bind.
    lease = None
    claim_for_recording = None

    def __init__(self):
        self.submitted = []

    def submit(self, arq_uuids, claimed=None):
        self.submitted.append(sorted(arq_uuids))
