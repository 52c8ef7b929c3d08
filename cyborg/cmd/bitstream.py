"""cyborg-bitstream: upload, list and show the FPGA bitstreams kept in Glance.

``upload`` turns its options into the standard's image properties and checks
them with ``cyborg.bitstream`` before anything reaches Glance: bad metadata
get one line per bad key on stderr, exit status 2 and no image. A name
that a bitstream already has is refused the same way, unless ``--replace``
asks for the new image to take the place of the old: it is uploaded
first and the old ones deleted after, so that a failure part-way leaves
the old image, or both, never neither. ``list``
shows the images tagged ``FPGA``, filtered by Glance itself on their
properties; ``show`` one image and what keeps it from being a bitstream.
The calls go through ``cyborg.clients.glance.GlanceClient``.

Authentication is OpenStack's usual (``--os-cloud``, ``OS_*`` variables and
clouds.yaml, read by openstack.config). Without an auth URL, a cloud or an
auth type, the all-in-one's Glance is used without a token:
``--os-image-url`` (``OS_IMAGE_URL``), else http://127.0.0.1:9292.

Exit status: 0 success; 1 Glance or the auth options failed (with
``--replace``: also when an old image could not be deleted); 2 a bad
command line, bad metadata or a name already taken (nothing was created
in Glance).
"""

import argparse
import itertools
import json
import logging
import os
import sys

from keystoneauth1 import exceptions as ks_exceptions
import openstack.config
from openstack import exceptions as sdk_exceptions

from cyborg import bitstream
from cyborg.cmd import bitstream_glance
from cyborg.cmd import bitstream_output
from cyborg import exception

PROG = 'cyborg-bitstream'
EXIT_FAILURE = 1
EXIT_USAGE = 2

# The standard keys ``list`` filters on, by option.
LIST_FILTERS = (('function_uuid', 'function_uuid'),
                ('function_name', 'function_name'),
                ('region_uuid', 'region_uuid'))


class UsageError(Exception):
    """A bad command line; each of ``problems`` is one line on stderr."""

    def __init__(self, *problems):
        super().__init__(' '.join(problems))
        self.problems = problems


def option_of(key):
    """The upload option giving standard key ``key`` (a ``bitstream.Key``)."""
    return '--' + key.name.replace('_', '-')


def _metadata_help(key):
    need = 'nullable' if key.nullable else 'required'
    if key.kind == bitstream.TOPOLOGY:
        return ('File holding the function topology, the standard\'s JSON of '
                'PFs and VFs (%s).' % need)
    kind = ', a UUID' if key.kind == bitstream.UUID else ''
    return '%s (%s%s).' % (key.description.rstrip('.'), need, kind)


def _add_output_options(parser, columns):
    parser.add_argument(
        '-f', '--format', choices=bitstream_output.FORMATS, default='table',
        help='Output format (default: table).')
    parser.add_argument(
        '-c', '--column', action='append', default=[], metavar='COLUMN',
        help='Show only this column (repeatable): %s.' % ', '.join(columns))


def build_parser(config, argv):
    """The parser of ``argv``, with openstack.config's auth options.

    openstack.config peeks at ``argv`` (and rewrites ``_`` in option names
    to ``-`` in place) to register the options of the auth type chosen.
    """
    parser = argparse.ArgumentParser(
        prog=PROG, description='Upload, list and show FPGA bitstreams (Glance '
        'images tagged %s with bitstream metadata).' % bitstream.TAG)
    parser.add_argument(
        '--os-image-url', metavar='URL',
        default=os.environ.get('OS_IMAGE_URL'),
        help='Glance endpoint (env OS_IMAGE_URL). Without auth options the '
             'default is the all-in-one\'s %s; with them, the service '
             'catalog\'s.' % bitstream_glance.AIO_IMAGE_URL)
    parser.add_argument('--debug', action='store_true',
                        help='Log the HTTP requests and responses.')
    config.register_argparse_arguments(parser, argv, service_keys=['image'])
    commands = parser.add_subparsers(dest='command', metavar='COMMAND',
                                     required=True)
    _add_upload(commands)
    _add_list(commands)
    _add_show(commands)
    return parser


def _add_upload(commands):
    """The ``upload`` command: a file and an option per standard key."""
    upload = commands.add_parser(
        'upload', help='Upload a bitstream file with its metadata.',
        description='Upload FILE to Glance as an image tagged %s with the '
        'standard\'s bitstream metadata. The metadata are checked first: '
        'when a key is bad, each is named on stderr and nothing is '
        'uploaded.' % bitstream.TAG)
    upload.add_argument('file', metavar='FILE', help='The bitstream file.')
    upload.add_argument('--name', help='Name of the Glance image, and its '
                        'bs-name unless --bs-name is given. A name another '
                        'bitstream has is refused unless --replace is given.')
    upload.add_argument(
        '--replace', action='store_true',
        help='Replace the bitstreams of that name: upload the new image, '
             'then delete the old ones (their ids change: device profiles '
             'naming them by accel:bitstream_id must be updated).')
    for key in bitstream.KEYS:
        upload.add_argument(
            option_of(key), dest=key.field,
            metavar='FILE' if key.kind == bitstream.TOPOLOGY else None,
            help=_metadata_help(key))
    _add_output_options(upload, bitstream_output.SHOW_FIELDS)
    upload.set_defaults(run=upload_bitstream,
                        columns=bitstream_output.SHOW_FIELDS)


def _add_list(commands):
    """The ``list`` command and its filters."""
    listing = commands.add_parser(
        'list', help='List the bitstreams (images tagged %s).'
        % bitstream.TAG)
    function = listing.add_mutually_exclusive_group()
    function.add_argument('--function-uuid', metavar='UUID',
                          help='Only bitstreams of this function uuid.')
    function.add_argument('--function-name', metavar='NAME',
                          help='Only bitstreams of this function name.')
    listing.add_argument('--region-uuid', metavar='UUID',
                         help='Only bitstreams for this region uuid.')
    _add_output_options(listing, bitstream_output.LIST_COLUMNS)
    listing.set_defaults(run=list_bitstreams,
                         columns=bitstream_output.LIST_COLUMNS)


def _add_show(commands):
    """The ``show`` command: one image, by id or bitstream name."""
    show = commands.add_parser(
        'show', help='Show one image and whether it is a valid bitstream.')
    show.add_argument('image', metavar='IMAGE',
                      help='Image id, or name of a bitstream.')
    _add_output_options(show, bitstream_output.SHOW_FIELDS)
    show.set_defaults(run=show_bitstream,
                      columns=bitstream_output.SHOW_FIELDS)


def check_columns(args):
    """Refuse ``-c`` names the command does not show.

    :raises: UsageError
    """
    unknown = [name for name in args.column if name not in args.columns]
    if unknown:
        raise UsageError('unknown column %s; the columns are %s.' % (
            ', '.join(unknown), ', '.join(args.columns)))


# Commands ----------------------------------------------------------------

def _file_problem(path, what):
    """Why the file at ``path`` cannot be read, or None."""
    if not os.path.isfile(path):
        return '%s %s is not a file.' % (what, path)
    if not os.access(path, os.R_OK):
        return '%s %s cannot be read.' % (what, path)
    return None


def _topology_value(path):
    """The topology in file ``path``: the JSON object, or the text as it is
    when it is no JSON (``cyborg.bitstream`` then says what is wrong)."""
    with open(path, encoding='utf-8', errors='replace') as topology_file:
        text = topology_file.read()
    try:
        return json.loads(text)
    except ValueError:
        return text


def _key_of_problem(problem):
    """The standard key a problem sentence of ``cyborg.bitstream`` is about.

    Each sentence starts with its key's name; the longest match wins
    (``driver_ver`` over ``driver``).
    """
    matches = [key for key in bitstream.KEYS
               if problem.startswith((key.name + ' ', key.name + ':'))]
    return max(matches, key=lambda key: len(key.name), default=None)


def _metadata_problem(problem):
    """``problem`` prefixed with the option that sets the key it is about."""
    key = _key_of_problem(problem)
    if key is None:
        return problem
    option = option_of(key)
    if key.name == 'bs-name':
        option = '--name or --bs-name'
    return '%s: %s' % (option, problem)


def upload_values(args):
    """``(image name, standard key values)`` of upload's options.

    :raises: UsageError naming each unreadable file and bad key
    """
    problems = []
    file_problem = _file_problem(args.file, 'FILE')
    if file_problem is None and os.path.getsize(args.file) == 0:
        file_problem = 'FILE %s is empty.' % args.file
    if file_problem:
        problems.append(file_problem)
    values = {key.name: getattr(args, key.field) for key in bitstream.KEYS}
    if values['bs-name'] is None:
        values['bs-name'] = args.name
    if args.topology is not None:
        topology_problem = _file_problem(args.topology, '--topology file')
        if topology_problem:
            problems.append(topology_problem)
            values['topology'] = None
        else:
            values['topology'] = _topology_value(args.topology)
    problems += [_metadata_problem(problem)
                 for problem in bitstream.validate_properties(values)]
    if problems:
        raise UsageError(*problems)
    return args.name or values['bs-name'], values


class ReplaceIncomplete(exception.CyborgException):
    """The new image is up but old images of its name are still there."""

    msg_fmt = ('uploaded image %(image_id)s as %(name)s but could not delete '
               'the older %(old)s: %(reasons)s Delete %(them)s once it can '
               'be: openstack image delete %(ids)s')


def named_bitstreams(images, name):
    """The images tagged FPGA named ``name`` (what ``show NAME`` finds)."""
    return images.list_images({'tag': bitstream.TAG, 'name': name})


def _ids(images):
    return ', '.join(image['id'] for image in images)


def check_name_free(existing, name):
    """Refuse a name bitstreams already have (``existing``).

    :raises: UsageError naming them and ``--replace``
    """
    if existing:
        raise UsageError(
            'a bitstream named %s already exists (image %s); give --replace '
            'to replace it, or another --name.' % (name, _ids(existing)))


def delete_replaced(images, new_image, old_images):
    """Delete ``old_images``, replaced by ``new_image``; one already gone is
    fine.

    :raises: ReplaceIncomplete naming those left and why
    """
    left, reasons = [], []
    for old in old_images:
        try:
            images.delete_image(old['id'])
        except exception.ImageNotFound:
            continue
        except exception.CyborgException as error:
            left.append(old)
            reason = str(error).strip()
            reasons.append(reason if reason.endswith('.') else reason + '.')
    if left:
        several = len(left) > 1
        raise ReplaceIncomplete(
            image_id=new_image['id'], name=new_image['name'],
            old=('images ' if several else 'image ') + _ids(left),
            reasons=' '.join(reasons), them='them' if several else 'it',
            ids=' '.join(image['id'] for image in left))


def upload_bitstream(glance, args):
    """Upload FILE with its checked metadata and the FPGA tag; show it.

    With ``--replace`` the bitstreams of the same name are deleted once the
    new image is active; without it, a name taken is refused.
    """
    name, values = upload_values(args)
    properties = bitstream.to_properties(values)
    images = glance()
    existing = named_bitstreams(images, name)
    if not args.replace:
        check_name_free(existing, name)
    image = images.upload(args.file, name, properties, tags=[bitstream.TAG])
    delete_replaced(images, image, existing)
    return bitstream_output.render_one(bitstream_output.show_fields(image), args)


def _uuid_filter(option, value):
    """``bitstream.uuid_spellings`` of ``value``.

    :raises: UsageError when ``value`` is no uuid
    """
    spellings = bitstream.uuid_spellings(value)
    if spellings is None:
        raise UsageError('%s must be a UUID (32 hex digits, dashes '
                         'optional), got %r.' % (option, value))
    return spellings


def list_filters(args):
    """The Glance filters ``list`` sends, one dict per request.

    A uuid may be stored dashed or not, and Glance compares property values
    exactly, so each uuid filter asks for both spellings.

    :raises: UsageError for a filter that is no uuid
    """
    choices = []
    for option, key in LIST_FILTERS:
        value = getattr(args, option)
        if value is None:
            continue
        if key.endswith('_uuid'):
            spellings = _uuid_filter('--' + option.replace('_', '-'), value)
        else:
            spellings = (value,)
        choices.append([(key, spelling) for spelling in spellings])
    return [dict(combination, tag=bitstream.TAG)
            for combination in itertools.product(*choices)]


def list_bitstreams(glance, args):
    """List the images tagged FPGA that match the filters."""
    found = {}
    for filters in list_filters(args):
        for image in glance().list_images(filters):
            found[image['id']] = image
    ordered = sorted(found.values(),
                     key=lambda image: (image.get('name') or '', image['id']))
    return bitstream_output.render_many(
        [bitstream_output.list_row(image) for image in ordered],
        bitstream_output.LIST_COLUMNS, args)


def find_image(images, reference):
    """The image whose id is ``reference``, else the one bitstream named so.

    :raises: ImageNotFound; UsageError when several bitstreams have the name
    """
    image_id = bitstream.normalize_uuid(reference)
    if image_id is not None:
        return images.get_image(image_id)
    named = images.list_images({'tag': bitstream.TAG, 'name': reference})
    if not named:
        raise exception.ImageNotFound(image_id=reference)
    if len(named) > 1:
        raise UsageError('%d bitstreams are named %s (%s); give an id.' % (
            len(named), reference, ', '.join(image['id'] for image in named)))
    return named[0]


def show_bitstream(glance, args):
    """Show one image: Glance's fields, the standard keys and any problems."""
    image = find_image(glance(), args.image)
    return bitstream_output.render_one(bitstream_output.show_fields(image),
                                       args)


def main(argv=None, stdout=None, stderr=None):
    """Run one command; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        config = openstack.config.OpenStackConfig()
        parser = build_parser(config, argv)
    except sdk_exceptions.ConfigException as error:
        print('%s: error: %s' % (PROG, error), file=stderr)
        return EXIT_FAILURE
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else
                        logging.WARNING, format='%(levelname)s %(message)s')
    prefix = '%s %s' % (PROG, args.command)
    glance = bitstream_glance.Glance(config, args)
    try:
        check_columns(args)
        output = args.run(glance, args)
    except UsageError as error:
        for problem in error.problems:
            print('%s: %s' % (prefix, problem), file=stderr)
        return EXIT_USAGE
    except (sdk_exceptions.ConfigException,
            ks_exceptions.ClientException) as error:
        print('%s: the OpenStack auth options cannot be used: %s'
              % (prefix, error), file=stderr)
        return EXIT_FAILURE
    except exception.GlanceUnavailable as error:
        print('%s: %s (Glance at %s)' % (prefix, error, glance.target),
              file=stderr)
        return EXIT_FAILURE
    except (exception.CyborgException, OSError) as error:
        print('%s: %s' % (prefix, error), file=stderr)
        return EXIT_FAILURE
    print(output, file=stdout)
    return 0
