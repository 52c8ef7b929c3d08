"""Answers without a body, which Pecan would otherwise rewrite."""

import pecan


def empty(status):
    """The current response with ``status`` and an empty body.

    Pecan turns an empty 200 into a 204, except when the body is a
    generator it cannot see the end of; this one yields no bytes. The
    content type is left out, as there is no body to describe.
    """
    response = pecan.response
    response.status = status
    response.content_type = None
    response.app_iter = (chunk for chunk in [b''])
    return response
