"""The bottom of the house: what every layer of cyborg may import.

Its modules hold plain data and small types (the wire and flavor
vocabulary, the limits of the database columns, why a server could not
listen) and import nothing else of cyborg.
"""
