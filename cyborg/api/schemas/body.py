"""The JSON body of a request, or a 400 when it is missing or malformed."""

from cyborg import exception


def json_body(request):
    """The decoded JSON body of ``request``.

    :raises: exception.InvalidParameterValue (400) for an empty or
        malformed body
    """
    if not request.body:
        raise exception.InvalidParameterValue(err='A JSON body is required')
    try:
        return request.json_body
    except ValueError:
        raise exception.InvalidParameterValue(
            err='The body is not valid JSON') from None
