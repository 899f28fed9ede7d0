"""A product feed in XML (Google Merchant's RSS or Atom) is read as the items CSV is
(recsys/io/feed.py): a product a row, an element a column."""

from __future__ import annotations

import pytest

from recsys.errors import DataError
from recsys.io.readers import check_header, read_items

RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:g="http://base.google.com/ns/1.0">
<channel>
  <title>Harbor &amp; Nordic</title>
  <link>https://shop.test</link>
  <description>All our products</description>
  <item>
    <g:id>SH-N-M</g:id>
    <g:title>Linen Shirt - Navy / M</g:title>
    <g:description><![CDATA[<p>A relaxed <b>linen</b> shirt.</p>]]></g:description>
    <g:link>https://shop.test/p/1</g:link>
    <g:image_link>https://shop.test/1.jpg</g:image_link>
    <g:additional_image_link>https://shop.test/1b.jpg</g:additional_image_link>
    <g:additional_image_link>https://shop.test/1c.jpg</g:additional_image_link>
    <g:price>52.00 USD</g:price>
    <g:brand>Harbor</g:brand>
    <g:gtin>5901234123457</g:gtin>
    <g:color>Navy</g:color>
    <g:size>M</g:size>
    <g:item_group_id>SH</g:item_group_id>
    <g:shipping><g:country>US</g:country><g:service>Standard</g:service><g:price>4.95 USD</g:price></g:shipping>
  </item>
  <item>
    <g:id>SH-W-S</g:id>
    <g:title>Linen Shirt - White / S</g:title>
    <g:description>A relaxed linen shirt.</g:description>
    <g:price>49.00 USD</g:price>
    <g:brand>Harbor</g:brand>
    <g:color>White</g:color>
    <g:size>S</g:size>
    <g:item_group_id>SH</g:item_group_id>
  </item>
  <item>
    <g:id>DR-1</g:id>
    <title>Wrap Dress</title>
    <description>A red wrap dress.</description>
    <g:price>89.00 USD</g:price>
    <g:brand>Nordic</g:brand>
    <g:color>Red</g:color>
  </item>
</channel>
</rss>
"""


@pytest.fixture
def feed(tmp_path):
    path = tmp_path / "google-feed"  # no suffix: told by its content
    path.write_text(RSS)
    return path


def test_a_merchant_feed_is_a_row_a_product(feed):
    items, report = read_items(feed)
    assert items["item_id"].tolist() == ["SH-N-M", "DR-1"]  # the shirt's variants are one item
    shirt, dress = items.iloc[0], items.iloc[1]
    assert shirt["title"] == "Linen Shirt" and shirt["description"] == "A relaxed linen shirt."
    assert shirt["color"] == "Navy|White" and shirt["price"] == "49.00 USD"
    assert shirt["additional_image_link"] == "https://shop.test/1b.jpg|https://shop.test/1c.jpg"
    assert shirt["shipping"] == "US:Standard:4.95 USD"
    assert dress["title"] == "Wrap Dress" and dress["gtin"] == ""
    assert report.rows == 3 and report.aliases == {"SH-W-S": "SH-N-M"}


def test_an_atom_feed_reads_its_entries_and_links(tmp_path):
    path = tmp_path / "feed.atom"
    path.write_text("""<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:g="http://base.google.com/ns/1.0">
  <title>Shop</title><link href="https://shop.test"/>
  <entry><g:id>a1</g:id><title>Oak Chair</title><link href="https://shop.test/a1"/><g:brand>Acme</g:brand></entry>
  <entry><g:id>a2</g:id><title>Oak Table</title><link href="https://shop.test/a2"/><g:brand>Acme</g:brand></entry>
</feed>
""")
    items, _ = read_items(path)
    assert items[["item_id", "title", "link", "brand"]].values.tolist() == [
        ["a1", "Oak Chair", "https://shop.test/a1", "Acme"], ["a2", "Oak Table", "https://shop.test/a2", "Acme"]]


def test_a_feed_s_header_is_checked_before_a_training_job(feed, tmp_path):
    assert check_header(feed, "items").renamed == {"id": "item_id"}
    bad = tmp_path / "bad.xml"
    bad.write_text("<rss><channel><item><g_sku xmlns:g='x'>1</g_sku><name>Chair</name></item></channel></rss>")
    with pytest.raises(DataError, match="missing required column 'item_id'"):
        check_header(bad, "items")


@pytest.mark.parametrize("text, message", [
    ("""<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>
<rss><channel><item><id>1</id><title>&lol2;</title></item></channel></rss>""",
     "declares entities or refers to other files"),
    ("""<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<rss><channel><item><id>1</id><title>&x;</title></item></channel></rss>""",
     "declares entities or refers to other files"),
    ("<rss><channel><item><id>1</id><title>Chair</item></channel></rss>", "not well-formed XML"),
    ("<rss><channel><title>Nothing yet</title></channel></rss>", "no <item> or <entry> element"),
])
def test_a_feed_that_cannot_be_read_says_why(tmp_path, text, message):
    path = tmp_path / "feed.xml"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_items(path)


def test_recsys_train_reads_a_feed(feed, tmp_path, capsys):
    from cli.main import main

    assert main(["train", "--items", str(feed), "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "google-feed: id -> item_id" in err
    assert "1 row with the item_group_id of an earlier row read into that item" in err
