"""What cyborg-bitstream prints: tables, JSON or bare values.

``list`` prints a row per image and ``show`` the fields of one, Glance's
own and the standard keys, with the problems that keep an image from
being a valid bitstream (``cyborg.bitstream``). Tables have borders, as the
openstack client prints them; ``-c`` keeps only the columns named.
"""

import json

from cyborg import bitstream

FORMATS = ('table', 'json', 'value')
# What ``list`` shows of each image and ``show`` of one, in this order.
LIST_COLUMNS = ('id', 'name', 'vendor', 'board', 'function_name',
                'function_uuid', 'region_uuid', 'valid')
IMAGE_FIELDS = ('id', 'name', 'status', 'size', 'tags', 'visibility',
                'owner', 'os_hash_algo', 'os_hash_value', 'created_at',
                'updated_at')
SHOW_FIELDS = (IMAGE_FIELDS + tuple(key.name for key in bitstream.KEYS)
               + ('problems',))


def problems_of(image):
    """Why the Glance image is not a valid bitstream: sentences, or []."""
    try:
        bitstream.Bitstream.from_image(image)
    except bitstream.InvalidBitstream as error:
        return error.problems
    return []


def show_fields(image):
    """The fields ``show`` prints of ``image`` (a dict of Glance)."""
    fields = {name: image.get(name) for name in SHOW_FIELDS}
    fields['problems'] = problems_of(image)
    return fields


def list_row(image):
    """The columns ``list`` prints of ``image``."""
    row = {name: image.get(name) for name in LIST_COLUMNS}
    row['valid'] = not problems_of(image)
    return row


def _text(value):
    """``value`` for a table or ``-f value``: a list of sentences (the
    problems) joined by spaces, other lists (the tags) by commas."""
    if value is None:
        return ''
    if isinstance(value, (list, tuple)):
        items = [str(item) for item in value]
        sentences = all(item.endswith('.') for item in items)
        return (' ' if sentences else ', ').join(items)
    return str(value)


def _table(headers, rows):
    """A table with borders, as the openstack client prints one."""
    cells = [[_text(value) for value in row] for row in rows]
    widths = [max([len(header)] + [len(row[index]) for row in cells])
              for index, header in enumerate(headers)]
    border = '+' + '+'.join('-' * (width + 2) for width in widths) + '+'

    def line(values):
        return '| ' + ' | '.join(value.ljust(width) for value, width
                                 in zip(values, widths, strict=True)) + ' |'
    return '\n'.join([border, line(headers), border]
                     + [line(row) for row in cells] + [border])


def _selected(columns, chosen):
    return tuple(chosen) or columns


def render_one(fields, args):
    """``show``'s output of ``fields``: a Field/Value table, JSON or values."""
    names = _selected(tuple(fields), args.column)
    if args.format == 'json':
        return json.dumps({name: fields[name] for name in names}, indent=2)
    if args.format == 'value':
        return '\n'.join(_text(fields[name]) for name in names)
    return _table(('Field', 'Value'),
                  [(name, fields[name]) for name in names])


def render_many(rows, columns, args):
    """``list``'s output of ``rows`` (dicts): a table, JSON or values."""
    names = _selected(columns, args.column)
    if args.format == 'json':
        return json.dumps([{name: row[name] for name in names}
                           for row in rows], indent=2)
    if args.format == 'value':
        return '\n'.join(' '.join(_text(row[name]) for name in names)
                         for row in rows)
    return _table(names, [[row[name] for name in names] for row in rows])
