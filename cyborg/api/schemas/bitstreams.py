"""Declarations of POST /v2/bitstreams/{image_id}/prefetch (microversion
2.6): the image id of its path."""

from cyborg.api.schemas import declarations

# A Glance image id: a uuid; anything else is refused with a 400 naming
# the value (before any controller runs: ``cyborg.api.schemas.paths``).
IMAGE_ID = declarations.Uuid(
    normalize=True,
    description='The Glance image id of the bitstream (a uuid, dashed or '
                '32 hex digits); any other text is a 400.',
    messages={'type': 'Expected a Glance image id (a UUID) but received '
                      '{value!r}.'})
